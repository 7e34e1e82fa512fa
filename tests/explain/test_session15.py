"""Session 15: shapes written here, restating b21 dev rows and reviews 52, 54, 55 in our own words."""

from __future__ import annotations

import pytest
from paste_findings import findings_of


def _lead(text: str) -> tuple[str, str]:
    first = findings_of(text)[0]
    return first.category, first.severity.value


@pytest.mark.parametrize(
    "text",
    [
        "nvidia-smi shows 8 PIDs on GPU 0 and nothing on the others when I run "
        "torchrun --nproc_per_node 8 train.py\n",
        "After launching with deepspeed I see four processes on cuda:0, the other cards idle.\n",
    ],
)
def test_a_count_of_processes_on_gpu0_without_a_verb_is_a_pile_up(text: str) -> None:
    assert _lead(text) == ("no_set_device", "warning")


@pytest.mark.parametrize(
    "text",
    [
        "nvidia-smi shows 4 processes on GPU 0-3, one each; training works fine.\n",
        "There are 2 processes on GPU 0 and 2 on GPU 1 because I run two experiments at once.\n",
    ],
)
def test_processes_spread_over_gpus_are_no_pile_up(text: str) -> None:
    assert all(
        f.category != "no_set_device" or f.severity.value == "info" for f in findings_of(text)
    )


@pytest.mark.parametrize(
    "text",
    [
        "Our distributed TF job starts two workers per machine and every worker allocates all "
        "the memory on the first GPU, `/gpu:0`, so the second one fails with "
        "CUDA_ERROR_OUT_OF_MEMORY.\n",
        "With DDP all processes allocate memory on /gpu:0 and the other cards stay idle.\n",
    ],
)
def test_first_gpu_and_tensorflow_gpu0_name_the_pile_up(text: str) -> None:
    assert _lead(text)[0] == "no_set_device"


DS_LOCAL_ONLY = (
    "[WARNING] [runner.py:202:fetch_hostfile] Unable to find hostfile, will proceed with "
    "training with local resources only.\n"
)


def test_deepspeed_without_hostfile_on_one_node_raises_no_alarm() -> None:
    text = "Single GPU box, training runs fine, just curious about this line:\n" + DS_LOCAL_ONLY
    assert all(f.severity.value == "info" for f in findings_of(text))


@pytest.mark.parametrize(
    "text",
    [
        "We run two training nodes as containers on the same machine; the launcher groups "
        "workers by IP and hands out local ranks 0-7 over both, so set_device fails with "
        "invalid device ordinal on the second container.\n",
        "The fix keys workers by node id instead of hostname, which allows multi-container "
        "single-host setups where the workers of different containers were mixed up.\n",
    ],
)
def test_several_nodes_on_one_host_or_ip_lean_to_host_identity(text: str) -> None:
    assert _lead(text)[0] == "host_identity"


def test_several_workers_on_one_host_is_no_host_identity_alarm() -> None:
    text = "Four workers on the same host train fine with torchrun; loss goes down as expected.\n"
    assert all(
        f.category != "host_identity" or f.severity.value == "info" for f in findings_of(text)
    )


# --- review 52: what the ranks print of themselves --------------------------------------------


def test_ranks_printing_one_different_gpu_each_is_a_per_process_list() -> None:
    from rankmap.explain.printed_lists import printed_list_points, rank_lists

    lists = rank_lists("rank 0: CUDA_VISIBLE_DEVICES=0\nrank 1: CUDA_VISIBLE_DEVICES=1\n")
    assert [cat for cat, _, _ in printed_list_points(lists)] == ["per_process_visible_devices"]


# --- reviews 54 and 55 -------------------------------------------------------------------------


def test_two_nccl_builds_printed_by_the_ranks_are_a_version_conflict() -> None:
    from rankmap.explain.versions import versions_in

    text = "node1 rank0: torch 2.1.0 nccl=(2, 18, 1)\nnode2 rank8: torch 1.13.1 nccl=(2, 14, 3)\n"
    assert versions_in(text).nccl == ["2.18.1", "2.14.3"]
    assert versions_in("INFO vLLM is using nccl==2.20.5").nccl == ["2.20.5"]
    log = text + "node2:1:1 [0] NCCL WARN Message truncated : received 256 bytes instead of 4\n"
    assert _lead(log)[0] == "version_mismatch"


def test_the_nodes_launch_lines_told_in_sentences_are_compared() -> None:
    text = (
        "Two-node torchrun never gets past init\n\n"
        "node A (10.0.0.11): torchrun --nnodes=2 --nproc_per_node=8 --node_rank=0 "
        "--master_addr=10.0.0.11 --master_port=29500 train.py\n"
        "node B (10.0.0.12): torchrun --nnodes=2 --nproc_per_node=8 --node_rank=0 "
        "--master_addr=10.0.0.11 --master_port=29500 train.py\n"
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
        "8/16 clients joined.\n"
    )
    assert _lead(text) == ("host_identity", "warning")


def test_vllms_config_dump_is_no_custom_all_reduce_evidence() -> None:
    from rankmap.explain.catalogue import SIGNALS

    sig = next(s for s in SIGNALS if s.id == "custom-allreduce")
    assert sig.pattern.search("disable_custom_all_reduce=False") is None
    assert sig.pattern.search("custom allreduce failed: peer access") is not None


# Inputs written here, each with the cause its facts decide (sessions 15 reviews and b21 dev).
LEADS = [
    pytest.param(
        "Horovod + TF2: OOM on GPU 0 with 4 workers\n\n"
        "horovodrun -np 4 python train_keras.py on a 4-GPU box. I left out the GPU pinning "
        "block because it looked optional.\n"
        "[1,2]<stderr>:tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when "
        "allocating tensor on /job:localhost/replica:0/task:0/device:GPU:0\n",
        "no_set_device",
        id="a_sentence_after_a_command_on_its_line_is_read_as_prose",
    ),
    pytest.param(
        "Launching our two-node pretraining with deepspeed, the ranks on the second node never "
        "join and the rendezvous times out.\n" + DS_LOCAL_ONLY,
        "launcher_config",
        id="deepspeed_without_hostfile_in_a_multi_node_job_is_the_launcher",
    ),
    pytest.param(
        "torch sees one device on our 4-GPU ROCm node; rank 1 fails.\n\n"
        "```\n"
        "[rank0] HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0,1,2,3 device_count=1\n"
        "[rank1] HIP_VISIBLE_DEVICES=0 CUDA_VISIBLE_DEVICES=0,1,2,3 device_count=1\n"
        "[rank1]: RuntimeError: HIP error: invalid device ordinal\n"
        "```\n",
        "visible_devices_mismatch",
        id="every_rank_printing_the_same_one_gpu_list_is_a_narrowed_list",
    ),
    pytest.param(
        "Two MPI processes on a 2-GPU box, CuPy NCCL communicator.\n\n"
        "```\n0 using device 0\n1 using device 0\n"
        "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n```\n",
        "no_set_device",
        id="ranks_reporting_the_same_device_name_the_missing_selection",
    ),
    pytest.param(
        "jax.distributed.initialize on two hosts with 4 GPUs each; processes 4-7 fail.\n\n"
        "```python\npid = int(os.environ['OMPI_COMM_WORLD_RANK'])\n"
        "jax.distributed.initialize(num_processes=8, process_id=pid, local_device_ids=[pid])\n```\n\n"
        "```\njaxlib.xla_extension.XlaRuntimeError: INVALID_ARGUMENT: Invalid device ordinal "
        "value (4). Valid range is [0, 3].\n```\n",
        "global_rank_as_device",
        id="jax_local_device_ids_from_the_process_id_is_the_global_rank",
    ),
    pytest.param(
        "Our CI runners cannot start the GPU image any more.\n\n```\n"
        "docker: Error response from daemon: failed to create task for container: OCI runtime "
        "create failed: error running hook #0: nvidia-container-cli: requirement error: "
        "unsatisfied condition: cuda>=12.4, please update your driver to a newer version, or use "
        "an earlier cuda container: unknown.\n```\n",
        "version_mismatch",
        id="container_toolkit_cuda_requirement_is_a_version_problem_not_passthrough",
    ),
    pytest.param(
        "I pass --model-device cuda:0,1 to use both GPUs and get:\n\n"
        "```\nRuntimeError: Invalid device string: 'cuda:0,1'\n```\n",
        "launcher_config",
        id="a_device_list_given_to_a_single_device_option_is_configuration",
    ),
    pytest.param(
        'Pod spec has resources.limits nvidia.com/gpu: 1 and env CUDA_VISIBLE_DEVICES: "3" '
        "(from our bare-metal script).\nRuntimeError: No CUDA GPUs are available\n",
        "container_mapping",
        id="a_pod_given_one_gpu_with_a_host_numbered_list_is_passthrough",
    ),
    pytest.param(
        "mpi4py job: ranks 4-7 invalid device ordinal on 2x4-GPU VMs\n\n"
        "Our local rank counts lower ranks with the same socket.gethostname(); both VMs come "
        'from one image and `hostname` prints "gpu-template" on each.\n'
        "mpirun -np 8 -H 10.0.1.5:4,10.0.1.6:4 python train.py\n"
        "[1,5]<stderr>:RuntimeError: CUDA error: invalid device ordinal\n",
        "host_identity",
        id="the_same_hostname_printed_on_each_vm_is_host_identity",
    ),
]


@pytest.mark.parametrize(("text", "category"), LEADS)
def test_the_deciding_fact_leads(text: str, category: str) -> None:
    assert _lead(text)[0] == category


QUIET = [
    pytest.param(
        "vLLM on a Ray cluster of V100s stops at start-up.\n\n```\n"
        "(RayWorkerWrapper pid=1, ip=10.0.0.2) ValueError: Bfloat16 is only supported on GPUs "
        "with compute capability of at least 8.0. Your Tesla V100 GPU has compute capability "
        "7.0.\n```\n",
        id="bfloat16_on_an_older_gpu_is_outside_the_family",
    ),
    pytest.param(
        "one process on one MIG slice, no distributed training\n"
        "using device cuda:0 (NVIDIA A100-SXM4-80GB MIG 3g.40gb)\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "ValueError: Expected input batch_size (32) to match target batch_size (31).\n",
        id="a_mig_slice_next_to_a_plain_python_exception_is_no_alarm",
    ),
]


@pytest.mark.parametrize("text", QUIET)
def test_a_failure_outside_the_family_raises_no_alarm(text: str) -> None:
    assert all(f.category == "other" or f.severity.value == "info" for f in findings_of(text))


@pytest.mark.parametrize(
    ("text", "gpus"),
    [("Running on a g5.12xlarge (4x A10G).", 4), ("two nodes of 8x L40S", 8), ("a 2x T4 box", 2)],
)
def test_cloud_gpu_models_count_as_the_machines_gpus(text: str, gpus: int) -> None:
    from rankmap.explain.docread import read_document

    assert read_document(text).stated_gpus == gpus


def test_an_undecided_ordinal_follows_the_cause_that_leads_at_error() -> None:
    text = (
        "Every rank on the second node crashes\n\n2 nodes x 8 H100. torchrun --nnodes=2 "
        "--nproc_per_node=8 --node_rank=$NODE_RANK --master_addr=10.0.0.11 train.py\n"
        '[rank9]:     torch.cuda.set_device(int(os.environ["RANK"]))\n'
        "[rank9]: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    found = findings_of(text)
    assert (found[0].category, found[0].severity.value) == ("global_rank_as_device", "error")
    assert [f.code for f in found if f.severity.value == "error"] == [found[0].code]


def test_sruns_summary_names_the_ranks_that_exited_not_those_it_terminated() -> None:
    from rankmap.explain import named

    lines = [
        "RuntimeError: CUDA error: invalid device ordinal",
        "srun: error: gn07: tasks 1-3: Exited with exit code 1",
        "srun: error: gn07: task 0: Terminated",
    ]
    assert named.failure_ranks(lines, task_ranks=True) == (set(), {1, 2, 3})
    assert named.failure_ranks(lines) == (set(), set())  # a launcher inside srun: no ranks


def test_a_failing_process_is_named_by_the_rank_its_pid_printed() -> None:
    from rankmap.explain import named

    lines = [
        "(TrainWorker pid=81422) rank=0 local_rank=0 CUDA_VISIBLE_DEVICES=0",
        "(TrainWorker pid=81423) rank=1 local_rank=1 CUDA_VISIBLE_DEVICES=1",
        "ray.exceptions.RayTaskError(RuntimeError): ray::TrainWorker.setup() (pid=81423, "
        "ip=10.0.4.21) RuntimeError: CUDA error: invalid device ordinal",
    ]
    assert named.failure_ranks(lines)[0] == {1}


def test_ranks_told_to_wait_until_killed_are_not_the_failing_ones() -> None:
    from rankmap.explain import named

    lines = [
        "4: RuntimeError: CUDA error: invalid device ordinal",
        "srun: error: node2: tasks 4-7: Exited with exit code 1",
        "Ranks 0-3 on the first node then just hang in init_process_group until killed.",
    ]
    assert named.failure_ranks(lines, task_ranks=True) == (set(), {4, 5, 6, 7})


# --- review 57 (a read of the session's diff): false alarms and lost ranks it proved -------------
QUIET_57 = [
    pytest.param(
        "DDP dies with an NCCL error. set_device(local_rank) is called first. I also tried without "
        "pinning memory in the DataLoader.\nNCCL WARN Cuda failure 'unhandled cuda error'\n",
        id="pinning_memory_is_no_device_pinning",
    ),
    pytest.param(
        "Two nodes with the same machine type (p4d.24xlarge) train fine for hours.\n",
        id="the_same_machine_type_is_no_shared_host",
    ),
]


@pytest.mark.parametrize("text", QUIET_57)
def test_review57_settings_that_are_no_mapping_cause_raise_no_alarm(text: str) -> None:
    assert all(
        f.category not in ("no_set_device", "host_identity") or f.severity.value == "info"
        for f in findings_of(text)
    )


def test_two_attempts_on_one_node_are_not_two_nodes() -> None:
    text = (
        "Rendezvous fails on our first node.\n"
        "First attempt: torchrun --nnodes 2 --nproc_per_node 8 --node_rank 0 "
        "--master_addr 10.0.0.1 train.py\n"
        "Second attempt: torchrun --nnodes 2 --nproc_per_node 8 --node_rank 0 "
        "--master_addr 10.0.0.1 --max_restarts 0 train.py\n"
        "torch.distributed.DistStoreError: Timed out after 900 seconds waiting for clients. "
        "8/16 clients joined.\n"
    )
    assert all(
        f.category != "host_identity" or f.severity.value == "info" for f in findings_of(text)
    )


def test_a_slurm_gpu_request_is_no_container_request() -> None:
    from rankmap.explain.docread_devices import gpu_request

    assert gpu_request("#SBATCH --gpus=4\nsrun --gpus 4 python train.py\n") is None
    assert gpu_request("docker run --gpus 2 img python train.py\n") == (2, None)


def test_every_slurm_task_printing_cuda_visible_devices_0_is_no_narrowed_list() -> None:
    text = (
        "0: [rank0] CUDA_VISIBLE_DEVICES=0 SLURM_LOCALID=0 host=n1\n"
        "1: [rank1] CUDA_VISIBLE_DEVICES=0 SLURM_LOCALID=1 host=n1\n"
        "1: [rank1]: ncclRemoteError: A call failed possibly due to a network error\n"
        "srun: error: n1: task 1: Exited with exit code 1\n"
    )
    assert all(f.category != "visible_devices_mismatch" or f.severity.value == "info"
               for f in findings_of(text))  # fmt: skip


def test_a_line_that_names_the_failing_rank_and_the_waiting_ones_keeps_the_failing_one() -> None:
    from rankmap.explain import named

    line = 'rank 3 dies with "CUDA error: invalid device ordinal" and the other ranks hang until killed.'
    assert named.failure_ranks([line])[0] == {3}
