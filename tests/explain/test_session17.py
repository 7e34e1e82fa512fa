"""Session 17: shapes written here, restating review and b23 dev findings in our own words."""

from __future__ import annotations

import pytest
from paste_findings import findings_of

from rankmap.explain.docread import read_document


def _lead(text: str) -> tuple[str, str]:
    first = findings_of(text)[0]
    return first.category, first.severity.value


# --- every process on every GPU ---------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Each worker apparently grabs both GPUs.",
        "every process allocates memory on all GPUs",
        "Each rank is using all 4 GPUs at the same time.",
    ],
)
def test_each_process_taking_every_gpu_is_read(sentence: str) -> None:
    assert "procs-on-every-gpu" in read_document(sentence + "\n").hits


@pytest.mark.parametrize(
    "sentence",
    [
        # every launcher's process sees all GPUs before it selects one: no symptom
        "Each process sees all GPUs, so we call set_device(local_rank).",
        "Each model uses all of the GPUs through tensor parallelism.",
        "Each process runs on all 8 GPUs, one each.",
    ],
)
def test_seeing_every_gpu_or_a_model_on_every_gpu_is_no_symptom(sentence: str) -> None:
    assert "procs-on-every-gpu" not in read_document(sentence + "\n").hits


def _table(rows: list[tuple[int, int]]) -> str:
    return "".join(
        f"|    {gpu}   N/A  N/A     {pid}      C   python                           3000MiB |\n"
        for gpu, pid in rows
    )


def test_a_process_table_of_ranks_each_on_every_gpu_is_no_device_selection() -> None:
    rows = [(gpu, pid) for pid in (501, 502, 503) for gpu in (0, 1, 2)]
    text = "TF workers on one host run out of memory\n\n" + _table(rows)
    facts = read_document(text)
    assert facts.every_gpu == "3 processes each hold memory on every GPU (0, 1, 2)"
    found = findings_of(text)
    assert found[0].category == "no_set_device"
    assert "each hold memory on every GPU" in found[0].detail


def test_one_process_on_every_gpu_is_one_rank_using_them_by_design() -> None:
    text = "DataParallel run\n\n" + _table([(0, 501), (1, 501), (2, 501)])
    assert read_document(text).every_gpu is None


def test_ranks_each_on_their_own_gpu_are_not_on_every_gpu() -> None:
    text = "DDP run\n\n" + _table([(0, 501), (1, 502), (2, 503)])
    assert read_document(text).every_gpu is None


# --- a wrapper that gives each rank its own GPU ------------------------------------------------


def test_a_wrapper_giving_each_rank_one_gpu_leads_to_per_process_lists() -> None:
    text = (
        "Horovod: IndexError on every rank except 0\n\n"
        "Our site wrapper sets CUDA_VISIBLE_DEVICES to a single GPU for each MPI rank.\n\n"
        "    gpus = tf.config.list_physical_devices('GPU')\n"
        "    tf.config.set_visible_devices(gpus[hvd.local_rank()], 'GPU')\n\n"
        "IndexError: list index out of range\n"
        "Invalid device ordinal value (1). Valid range is [0, 0]\n"
    )
    assert _lead(text)[0] == "per_process_visible_devices"


def test_one_list_for_every_run_is_no_per_process_list() -> None:
    assert (
        "one-gpu-per-proc"
        not in read_document("I set CUDA_VISIBLE_DEVICES=0,1 for each run\n").hits
    )


# --- a failure told as over --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "[solved] invalid device ordinal on our 4-GPU boxes\n\nFor the record: last week the runs "
        'died with "CUDA error: invalid device ordinal" because the launch still had '
        "--nproc_per_node=8 on 4 GPUs. We changed it to 4.\n",
        "Closing this: NCCL reported Duplicate GPU detected : rank 1 and rank 0 both on CUDA device "
        "41000 because the script never called set_device. I added the call and the run now "
        "completes.\n",
    ],
)
def test_a_failure_told_as_solved_keeps_its_cause_at_info(text: str) -> None:
    found = findings_of(text)
    assert found[0].category in ("oversubscribed", "no_set_device")
    assert all(f.severity.value == "info" for f in found)
    assert "tells this failure as solved" in found[0].detail


@pytest.mark.parametrize(
    "text",
    [
        "It works now with 1 GPU, but with 2 GPUs I get this:\n"
        "NCCL WARN Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000\n",
        "I thought it was fixed? Still:\nRuntimeError: CUDA error: invalid device ordinal\n",
        "It was fixed in 2.18 but is back:\nRuntimeError: CUDA error: invalid device ordinal\n",
    ],
)
def test_a_failure_still_open_is_no_solved_story(text: str) -> None:
    assert read_document(text).resolved is None
    assert findings_of(text)[0].severity.value != "info"


def test_another_problem_told_as_fixed_leaves_the_printed_failure_loud() -> None:
    text = (
        "DeepSpeed hostfile run fails on the second node\n\n"
        "Before this I was chasing a socket timeout; that was the firewall and is fixed now.\n\n"
        "deepspeed --hostfile hostfile train.py\n\n"
        "[rank5]: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    first = findings_of(text)[0]
    assert first.severity.value == "error"
    assert "solved" not in first.detail


def test_a_new_failure_after_a_solved_one_is_read_as_usual() -> None:
    text = (
        "Solved the device issue by adding set_device.\n\nNew error now:\n\n"
        "NCCL WARN Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000\n\nWhy?\n"
    )
    found = findings_of(text)
    assert found[0].severity.value == "error"
    assert "solved" not in found[0].detail


# --- a caption before a launch command ---------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Command: `torchrun --nproc_per_node 4 train.py`",
        "I run: torchrun --nproc_per_node 4 train.py",
        "**Launch command:** torchrun --nproc_per_node 4 train.py",
    ],
)
def test_a_captioned_launch_line_is_the_launch(line: str) -> None:
    text = f"title\n\n{line}\n\nRuntimeError: CUDA error: invalid device ordinal\n"
    assert read_document(text).launch == "torchrun --nproc_per_node 4 train.py"


def test_a_sentence_after_a_caption_word_is_no_launch() -> None:
    assert read_document("Run: python train.py is what I do\n").launch is None


# --- what would decide, in the launcher's words ------------------------------------------------


def test_the_per_rank_list_check_uses_the_launchers_own_variables() -> None:
    text = "mpirun -np 4 python train.py\nRuntimeError: CUDA error: invalid device ordinal\n"
    found = findings_of(text)
    per_process = next(f for f in found if f.category == "per_process_visible_devices")
    assert "OMPI_COMM_WORLD_LOCAL_RANK" in per_process.detail
    assert "srun" not in per_process.detail


# --- review 64 ---------------------------------------------------------------------------------


def test_one_slot_per_host_in_a_sentence_makes_a_duplicate_gpu_two_machines_taken_for_one() -> None:
    text = (
        "mpirun across two docker hosts -> Duplicate GPU detected\n\n"
        "One container per machine from the same compose file, then mpirun -np 2 -H "
        "10.0.0.11:1,10.0.0.12:1 python train.py\n\n"
        "trainer:77:102 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
        "on CUDA device 1b000\n"
    )
    facts = read_document(text)
    assert facts.launch is None  # the title is no launch command
    assert (facts.hosts_in_launch, facts.slots_per_host) == (2, 1)
    assert _lead(text)[0] == "host_identity"


def test_nccl_counting_one_node_for_the_machines_the_prose_counts_is_one_host_identity() -> None:
    text = (
        "2 machines, 8 GPUs each, but NCCL sees one node\n\n"
        "h1:71:71 [0] NCCL INFO comm 0x6e1 rank 0 nRanks 16 nNodes 1 localRanks 16 localRank 0\n"
        "h1:79:79 [8] NCCL WARN Cuda failure 'invalid device ordinal'\n"
    )
    assert read_document(text).stated_machines == 2
    assert _lead(text)[0] == "host_identity"


def test_a_process_that_saw_its_whole_machine_had_no_per_process_list() -> None:
    text = (
        "# JAX: 2 hosts x 4 GPUs, one process per GPU, srun -n 8\n"
        "pid = int(os.environ['SLURM_PROCID'])\n"
        "jax.distributed.initialize(num_processes=8, process_id=pid, local_device_ids=[pid])\n"
        "# XlaRuntimeError: INVALID_ARGUMENT: Invalid device ordinal value (4). Valid range is "
        "[0, 3].\n"
    )
    assert read_document(text).visible_range == 4
    assert _lead(text)[0] == "global_rank_as_device"


def test_a_security_group_is_a_network_failure_the_answer_names() -> None:
    text = (
        "Watchdog timeout at the first allreduce on 2 nodes\n\n"
        "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800123 milliseconds\n\n"
        "The rank map looked right. The security group only allows ports 22 and 29500.\n"
    )
    found = findings_of(text)
    assert found[0].code == "RM003" and found[0].severity.value == "info"
    assert "security group" in found[0].detail and "NCCL_DEBUG" not in found[0].fix


def test_tensorflow_placing_on_a_gpu_past_the_list_is_the_list() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=0,1 python train_tf.py\n\n"
        "RuntimeError: /job:localhost/replica:0/task:0/device:GPU:2 unknown device.\n"
    )
    assert _lead(text) == ("visible_devices_mismatch", "warning")


def test_cuda_error_802_names_the_fabric_manager() -> None:
    text = (
        "HGX H100 fresh install\n\ntorchrun --nproc_per_node=8 train.py\n"
        "RuntimeError: CUDA error: system not yet initialized\n"
    )
    first = findings_of(text)[0]
    assert first.category == "other"
    assert "nvidia-fabricmanager" in first.fix


# --- b23 dev, restated ---------------------------------------------------------------------------


def test_no_nccl_in_a_windows_build_is_the_platform_not_a_version() -> None:
    text = (
        "Training fails on my Windows 11 PC with two GPUs\n\n"
        "RuntimeError: Distributed package doesn't have NCCL built in\n"
    )
    first = findings_of(text)[0]
    assert first.category == "other"
    assert "gloo" in first.fix


def test_no_nccl_in_a_build_elsewhere_stays_a_version_problem() -> None:
    text = "torch 1.4 on Ubuntu\n\nRuntimeError: Distributed package doesn't have NCCL built in\n"
    assert findings_of(text)[0].category == "version_mismatch"


def test_tensors_on_two_devices_in_one_process_is_no_alarm() -> None:
    text = (
        "Demo crashes in docker\n\nRuntimeError: Expected all tensors to be on the same device, "
        "but found at least two devices, cuda:1 and cuda:0!\n"
    )
    assert all(f.severity.value == "info" for f in findings_of(text))


def test_tensors_on_two_devices_under_torchrun_still_warn() -> None:
    text = (
        "torchrun --nproc_per_node 2 train.py\n\nRuntimeError: Expected all tensors to be on the "
        "same device, but found at least two devices, cuda:1 and cuda:0!\n"
    )
    assert findings_of(text)[0].severity.value != "info"


@pytest.mark.parametrize(
    ("line", "category"),
    [
        (
            "ValueError: You can't train a model that has been loaded with `device_map='auto'` in "
            "any distributed mode. Please rerun your script specifying `--num_processes=1`",
            "launcher_config",
        ),
        (
            "ValueError: DistributedDataParallel device_ids and output_device arguments only work "
            "with single-device/multiple-device GPU modules or CPU modules, but got device_ids [0]",
            "launcher_config",
        ),
        (
            "RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with "
            "multiprocessing, you must use the 'spawn' start method",
            "launcher_config",
        ),
        (
            "ValueError: You can't train a model that has been loaded in 8-bit precision on a "
            "different device than the one you're training on.",
            "no_set_device",
        ),
    ],
)
def test_framework_refusals_name_their_configuration(line: str, category: str) -> None:
    first = findings_of(f"multi-GPU fine-tuning fails\n\n{line}\n")[0]
    assert first.category == category and first.severity.value != "info"
    assert first.fix


def test_a_per_process_list_set_in_code_with_every_process_on_gpu0_did_not_apply() -> None:
    text = (
        "# Always use gpu0\n\nAll processes run on gpu0 although each gets its own gpu_id: a bug?\n\n"
        "```python\ndef gpu_setup(gpu_id):\n"
        "    os.environ['CUDA_VISIBLE_DEVICES'] = str(gpu_id)\n"
        "    return torch.device('cuda')\n```\n"
    )
    assert findings_of(text)[0].category == "visible_devices_mismatch"


def test_the_container_runtimes_list_on_the_host_is_not_read() -> None:
    text = (
        "I hide my old card with NVIDIA_VISIBLE_DEVICES=1,2 but the job still uses it and fails.\n\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    found = findings_of(text)
    assert found[0].category == "visible_devices_mismatch"


def test_mxnets_invalid_gpu_id_is_an_invalid_device() -> None:
    text = (
        "mxnet.base.MXNetError: Check failed: exec_ctx.dev_id < device_count_ (1 vs. 1) Invalid "
        "GPU Id: 1, Valid device id should be less than device_count: 1\n"
    )
    assert "invalid-device-any" in read_document(text).hits


def test_cuda_error_46_by_number_is_a_gpu_held_by_another_process() -> None:
    text = "Fatal CUDA Error: Return value 46 from 'cudaStreamCreate(&stream)'. Exiting.\n"
    assert "gpu-held-by-another" in read_document(text).hits
    assert "gpu-held-by-another" not in read_document("loss 46.2 after 46 seconds\n").hits


def test_a_launcher_that_omitted_the_node_rank_is_read() -> None:
    text = "Our adapted launcher omitted `--node-rank` on the worker, so both nodes were node 0.\n"
    assert "node-rank-unset" in read_document(text).hits


# --- review 65 ---------------------------------------------------------------------------------


def test_ddps_own_log_line_naming_device_ids_is_no_compose_file() -> None:
    line = (
        "I0305 distributed.py:1098] [Rank 0]: DDP Initialized with: broadcast_buffers: True, "
        "device_ids: 0, dtypes: float, world_size: 4\n"
    )
    assert "docker-daemon" not in read_document(line).hits
    compose = "services:\n  trainer:\n    deploy:\n      resources:\n        reservations:\n"
    compose += "          devices:\n            - driver: nvidia\n              device_ids: ['0']\n"
    assert "docker-daemon" in read_document(compose).hits


def test_ranks_running_different_collectives_are_a_code_path_not_the_mapping() -> None:
    text = (
        "training hangs at the end of epoch 1\n\n[rank2]: RuntimeError: Detected mismatch between "
        "collectives on ranks. Rank 2 is running collective: CollectiveFingerPrint(OpType="
        "BROADCAST), but Rank 0 is running collective: CollectiveFingerPrint(OpType=ALLREDUCE).\n"
    )
    found = findings_of(text)
    assert found[0].category == "other"
    assert not any(f.category != "other" and f.severity.value != "info" for f in found)


def test_a_clean_rank_map_names_the_exception_the_workers_stopped_with() -> None:
    text = (
        "n1:90021:90092 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 "
        "commId 0x5 - Init COMPLETE\n"
        "n1:90022:90093 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 "
        "commId 0x5 - Init COMPLETE\n"
        "pyarrow.lib.ArrowInvalid: JSON parse error: Missing a comma in row 1118224\n"
        "datasets.exceptions.DatasetGenerationError: An error occurred while generating the "
        "dataset\n"
    )
    first = findings_of(text)[0]
    assert first.code == "RM042"
    assert "DatasetGenerationError" in first.detail and "Fix the error" in first.fix


def test_an_oom_on_a_gpu_other_than_cuda0_does_not_claim_every_rank_is_on_cuda0() -> None:
    text = (
        "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 "
        "has a total capacity of 79.15 GiB of which 1.02 GiB is free. Process 412207 has 38.80 "
        "GiB memory in use. Process 1190544 has 39.31 GiB memory in use.\n"
    )
    found = findings_of(text)
    assert not any("every rank uses cuda:0" in f.title for f in found)
    assert found[0].code == "RM011"


def test_fractional_ray_gpus_beside_ray_workers_sharing_a_gpu_are_more_ranks_than_gpus() -> None:
    text = (
        "Ray Train: Duplicate GPU with half a GPU per worker\n\n```python\n"
        'scaling = ScalingConfig(num_workers=8, resources_per_worker={"GPU": 0.5})\n```\n\n'
        "(RayTrainWorker pid=51978) h:51978:52101 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 1 "
        "nranks 8 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x1c - Init START\n"
        "(RayTrainWorker pid=51977) h:51977:52099 [0] NCCL INFO ncclCommInitRank comm 0x2 rank 0 "
        "nranks 8 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x1c - Init START\n"
        "(RayTrainWorker pid=51978) h:51978:52101 [0] init.cc:871 NCCL WARN Duplicate GPU "
        "detected : rank 1 and rank 0 both on CUDA device 1b000\n"
    )
    first = findings_of(text)[0]
    assert first.category == "oversubscribed"
    assert "GPU': 1" in first.fix or "num_gpus=1" in first.fix


def test_errno_99_on_a_second_machine_is_a_machine_started_as_node_rank_0() -> None:
    text = (
        "accelerate launch --config_file cfg.yaml train.py on two machines\n\n"
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address. The server socket has failed to bind to 10.60.0.11:29500 (errno: 99 - "
        "Cannot assign requested address).\n"
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. 8/16 "
        "clients joined.\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.severity.value) == ("RM907", "error")
    assert "machine_rank" in first.fix


def test_torchrun_standalone_over_several_nodes_is_a_job_per_node() -> None:
    text = (
        "Job script:\n\n```bash\n#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n"
        "#SBATCH --gpus-per-node=8\nsrun torchrun --standalone --nproc_per_node=8 train.py\n```\n\n"
        "Both nodes print world_size=8 and the run fails.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config" and first.severity.value != "info"
    assert "--standalone" in first.fix


def test_a_port_in_use_is_what_failed_beside_the_families_words() -> None:
    text = (
        "Two trainings in two terminals\n\n"
        "terminal 1: CUDA_VISIBLE_DEVICES=1 torchrun --nproc_per_node=1 train.py\n"
        "terminal 2: CUDA_VISIBLE_DEVICES=2 torchrun --nproc_per_node=1 train.py\n\n"
        "I also changed the local_rank value but it still fails.\n\n"
        "RuntimeError: The server socket has failed to listen on any local network address. The "
        "server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).\n"
    )
    assert not any(f.category != "other" and f.severity.value != "info" for f in findings_of(text))


# --- review 67 ---------------------------------------------------------------------------------


def test_jsrun_resource_sets_of_one_gpu_are_per_process_lists() -> None:
    text = (
        "Summit, 2 nodes, 12 ranks\n\njsrun -n 12 -a 1 -c 7 -g 1 -r 6 python train.py\n\n"
        "  local_rank=1 CUDA_VISIBLE_DEVICES=0\n  RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert "jsrun-gpu-per-set" in read_document(text).hits
    assert findings_of(text)[0].category == "per_process_visible_devices"


def test_a_clean_container_environment_under_a_per_task_binding_is_the_container() -> None:
    text = (
        "#SBATCH --ntasks-per-node=4\n#SBATCH --gpus-per-task=1\n"
        "srun apptainer exec --nv --cleanenv image.sif python train.py\n\n"
        "h:1021:1021 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 1000 - Init START\n"
        "h:1022:1022 [0] NCCL INFO comm 0x2 rank 1 nranks 4 cudaDev 0 busId 1000 - Init START\n"
        "h:1022:1022 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
        "CUDA device 1000\n"
    )
    first = findings_of(text)[0]
    assert first.category == "container_mapping"
    assert "CUDA_VISIBLE_DEVICES" in first.fix


def test_a_compose_flow_mapping_names_its_device_ids() -> None:
    line = "compose: devices: [{driver: nvidia, device_ids: ['1'], capabilities: [gpu]}]\n"
    assert "docker-daemon" in read_document(line).hits


def test_gpu0_holding_several_named_processes_is_a_pile_up() -> None:
    line = "nvidia-smi during the run: GPU 0 has 4 python processes, GPUs 1-3 show 0MiB.\n"
    assert "all-on-gpu0" in read_document(line).hits


# --- review 66 ---------------------------------------------------------------------------------


def test_nccl_showing_the_listed_gpus_makes_a_renumbering_question_no_alarm() -> None:
    text = (
        "Is this a bug? I set CUDA_VISIBLE_DEVICES=2,3 but PyTorch says cuda:0 and cuda:1\n\n"
        "CUDA_VISIBLE_DEVICES=2,3 torchrun --standalone --nproc_per_node 2 train.py\n\n"
        "h:30112:30183 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 2 "
        "busId 56000 commId 0x9 - Init START\n"
        "h:30113:30184 [1] NCCL INFO ncclCommInitRank comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 3 "
        "busId 57000 commId 0x9 - Init START\n"
    )
    assert read_document(text).nccl_nvml == {2, 3}
    assert not any(f.category != "other" and f.severity.value != "info" for f in findings_of(text))


def test_an_intra_host_transport_of_unknown_ranks_per_node_is_no_host_identity() -> None:
    text = (
        "2-node job fails\n\nsrun --nodes=2 python train.py\n\n"
        "n1:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read\n"
        "OSError: [Errno 122] Disk quota exceeded\n"
    )
    assert not any(
        f.category == "host_identity" and f.severity.value != "info" for f in findings_of(text)
    )


def test_a_pod_showing_the_gpus_it_requested_sees_what_it_was_given() -> None:
    from rankmap.explain.containers import _as_many_as_requested
    from rankmap.explain.docread_devices import gpu_request

    assert gpu_request("same Job spec for both pools (nvidia.com/gpu: 8)") == (8, None)
    assert gpu_request("Capacity:\n  cpu: 96\n  nvidia.com/gpu: 8\n") is None
    doc = read_document("Job spec (nvidia.com/gpu: 8)\n\nnvidia-smi in the pod shows 8 GPUs.\n")
    assert _as_many_as_requested("nvidia-smi in the pod shows 8 GPUs.", doc)
    assert not _as_many_as_requested("nvidia-smi in the pod shows 16 GPUs.", doc)


def test_a_print_of_the_rank_beside_its_device_is_no_global_rank_selection() -> None:
    code = 'print(f"rank {dist.get_rank()} on cuda:{torch.cuda.current_device()}")\n'
    assert "rank-not-local" not in read_document(code).hits


def test_ranks_printing_the_same_device_with_on_are_read() -> None:
    from rankmap.explain.printed_lists import rank_devices

    assert rank_devices("rank 0 on cuda:0\nrank 1 on cuda:0\nrank 2 -> cuda:0\n") == {
        0: 0,
        1: 0,
        2: 0,
    }


def test_one_slurm_task_running_torchrun_is_no_per_task_binding() -> None:
    text = (
        "ranks 4-7 fail with HIP error: invalid device ordinal on an 8-GCD node\n\n"
        "```\nsrun -N1 -n1 torchrun --standalone --nproc_per_node 8 train.py\n```\n\n"
        "```\n$ env | grep VISIBLE\nHIP_VISIBLE_DEVICES=0,1,2,3\n"
        "[rank4]:     torch.cuda.set_device(local_rank)\n"
        "[rank4]: RuntimeError: HIP error: invalid device ordinal\n```\n"
    )
    assert read_document(text).env == {"HIP_VISIBLE_DEVICES": "0,1,2,3"}
    assert findings_of(text)[0].category == "visible_devices_mismatch"


def test_an_mpi_command_with_a_quoted_python_program_is_a_launch() -> None:
    text = (
        'mpiexec -n 8 -ppn 8 python -c "from mpi4py import MPI; c=MPI.COMM_WORLD; '
        'print(c.Get_rank(), c.Get_size())"\n'
    )
    assert read_document(text).launch is not None


def test_ranks_each_a_world_of_one_explain_their_pile_up_on_gpu0() -> None:
    text = (
        "mpi4py + torch prints rank 0 of 1 eight times\n\n"
        "mpiexec -n 8 -ppn 8 python train.py\n\n"
        "The job (device = rank % 4) puts every process on cuda:0.\n"
    )
    assert findings_of(text)[0].category != "no_set_device"


# --- b24 dev, restated -------------------------------------------------------------------------


def test_a_cpu_build_under_a_single_script_is_no_alarm() -> None:
    text = (
        "# AssertionError: Torch not compiled with CUDA enabled\n\n"
        "Whenever I run train.py I get this, any advice?\n"
    )
    assert all(f.severity.value == "info" for f in findings_of(text))


def test_a_cpu_build_in_a_distributed_launch_stays_loud() -> None:
    text = (
        "torchrun --nproc_per_node 2 train.py\n\n"
        "AssertionError: Torch not compiled with CUDA enabled\n"
    )
    first = findings_of(text)[0]
    assert first.category == "version_mismatch" and first.severity.value != "info"


def test_the_main_process_test_naming_local_rank_is_no_device_choice() -> None:
    assert (
        "local-rank-wrong"
        not in read_document("# fix LOCAL_RANK to be RANK in if_main_process\n").hits
    )


def test_local_rank_under_another_dest_is_the_local_rank() -> None:
    text = (
        "```python\nparser.add_argument('--local_rank', type=int, dest='rank', default=0)\n"
        "args = parser.parse_args()\ntorch.cuda.set_device(args.rank)\n```\n"
    )
    facts = read_document(text)
    assert facts.code_kind == "local_rank"
    assert "rank-as-device-code" not in facts.hits


def test_rays_noset_switch_is_no_per_worker_list() -> None:
    from rankmap.explain.catalogue import SIGNALS

    noset = next(s for s in SIGNALS if s.id == "ray-noset")
    assert dict(noset.supports)["no_set_device"] > 0
    assert "ray" not in read_document("RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1\n").hits


def test_an_images_all_list_is_no_list_outside_a_container(tmp_path) -> None:
    from rankmap.explain.docread import read_document as read

    assert read("export NVIDIA_VISIBLE_DEVICES=all\n").env["NVIDIA_VISIBLE_DEVICES"] == "all"
    found = findings_of("nvidia-smi -L shows 8 GPUs\nexport NVIDIA_VISIBLE_DEVICES=all\n")
    assert not any("read by the NVIDIA container runtime" in f.detail for f in found)


def test_local_rank_told_as_unset_under_a_scheduler_is_the_launcher() -> None:
    text = (
        "# LOCAL_RANK not being set in slurm\n\n"
        "Every process returns the default of 0, so each one logs as rank zero.\n"
    )
    assert "rank-env-unset-words" in read_document(text).hits
    assert findings_of(text)[0].category == "launcher_config"


# --- review of this session's diff (helpers' proofs, restated) --------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I switched to a bigger batch and now it runs out of memory on GPU 0.",
        "MASTER_PORT is fixed to 29500 on all nodes.",
        "Fixed-size buffers: rank 1 crashes on GPU 0.",
    ],
)
def test_ordinary_wording_is_no_solved_story(text: str) -> None:
    from rankmap.explain.denial import resolved_story

    assert resolved_story(text) is None


def test_an_nvidia_smi_table_after_a_prompt_is_still_a_table() -> None:
    text = (
        "```\n$ nvidia-smi\n"
        "|    0   N/A  N/A      501      C   python                           3000MiB |\n"
        "|    0   N/A  N/A      502      C   python                           3000MiB |\n```\n"
    )
    assert read_document(text).shared_gpu == "nvidia-smi: 2 processes on GPU 0"


def test_contractions_are_no_quoted_arguments() -> None:
    from rankmap.explain.document import reads_as_prose

    assert reads_as_prose("torchrun won't start, it's stuck at rendezvous")


def test_a_caption_over_a_long_run_of_spaces_is_fast() -> None:
    import time

    from rankmap.explain.document import classify_line

    start = time.monotonic()
    classify_line("Command: torchrun " + " " * 40000 + "`x", None)
    assert time.monotonic() - start < 1.0


def test_apptainers_contain_keeps_the_environment() -> None:
    assert "container-cleanenv" not in read_document("srun apptainer exec --nv -c i.sif x\n").hits
    assert "container-cleanenv" in read_document("srun apptainer exec --nv -C i.sif x\n").hits


@pytest.mark.parametrize(
    "line",
    [
        'os.environ["CUDA_VISIBLE_DEVICES"] = "0,1"  # both GPUs',
        'os.environ["CUDA_VISIBLE_DEVICES"] = cfg["gpus"]',
    ],
)
def test_a_configured_list_is_no_list_of_each_process(line: str) -> None:
    from rankmap.explain.visible_lists import _per_process_code_list

    doc = read_document(f"All processes run on GPU 0.\n\n```python\n{line}\n```\n")
    assert _per_process_code_list(doc) is None


def test_the_word_rank_is_no_launcher_variable() -> None:
    text = "the rank was not passed to DistributedSampler\n"
    assert "rank-env-unset-words" not in read_document(text).hits


def test_sliding_windows_are_no_operating_system() -> None:
    assert "windows-host" not in read_document("sliding windows attention on macOS\n").hits


def test_all_the_gpu_memory_is_no_every_gpu() -> None:
    text = "Each worker uses all the GPU memory on its own card.\n"
    assert "procs-on-every-gpu" not in read_document(text).hits


def test_a_question_about_a_firewall_is_told_no_failure() -> None:
    text = "The security group allows all traffic and ufw is disabled. Which interface do I use?\n"
    first = findings_of(text)[0]
    assert "failure outside the GPU mapping" not in first.detail


def test_ddps_init_block_of_one_field_per_line_is_no_compose_file() -> None:
    block = "DDP Initialized with:\nbroadcast_buffers: True\ndevice_ids: 0\noutput_device: 0\n"
    assert "docker-daemon" not in read_document(block).hits
