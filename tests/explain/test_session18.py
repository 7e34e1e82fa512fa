"""Session 18: shapes written here, restating review and b25 dev findings in our own words."""

from __future__ import annotations

from pathlib import Path

from paste_findings import findings_of

from rankmap.adapters.local import explain_files

# --- a store bound on a machine that is not MASTER_ADDR -----------------------------------------


def _bind_failure(launch: str) -> str:
    return (
        "The second machine fails right away; the first one is waiting.\n\n"
        f"$ {launch}\n"
        "Traceback (most recent call last):\n"
        '  File "static_tcp_rendezvous.py", line 55, in next_rendezvous\n'
        "    self._store = TCPStore(\n"
        "torch.distributed.DistNetworkError: The server socket has failed to bind to "
        "10.1.2.3:29500 (errno: 99 - Cannot assign requested address).\n"
    )


def test_errno_99_as_the_only_store_line_of_a_two_node_launch_is_a_node_rank_0_twice() -> None:
    launch = (
        "torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=10.1.2.3 "
        "--master_port=29500 train.py"
    )
    first = findings_of(_bind_failure(launch))[0]
    assert (first.code, first.category, first.severity.value) == (
        "RM907",
        "launcher_config",
        "error",
    )
    assert "node rank" in first.fix


def test_errno_99_on_a_one_node_launch_names_master_addr_not_a_node_rank() -> None:
    launch = "torchrun --nnodes=1 --nproc_per_node=4 --master_addr=10.1.2.3 train.py"
    first = findings_of(_bind_failure(launch))[0]
    assert first.code == "RM906"
    assert "127.0.0.1" in first.fix


# --- accelerate's gpu_ids is a visible-devices list ---------------------------------------------


def _accelerate_paste(smi_rows: int) -> str:
    smi = "".join(
        f"{i}, NVIDIA L4, 00000000:{16 * i + 1:02X}:00.0, 1 MiB\n" for i in range(smi_rows)
    )
    return (
        "accelerate: two of the processes fail at start\n\n"
        "```yaml\ndistributed_type: MULTI_GPU\nnum_machines: 1\nnum_processes: 4\n"
        "gpu_ids: 0,1\n```\n\n"
        "$ nvidia-smi --query-gpu=index,name,pci.bus_id,memory.used --format=csv\n"
        "index, name, pci.bus_id, memory.used [MiB]\n" + smi + "\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )


def test_gpu_ids_narrower_than_the_machine_is_the_users_list_against_the_process_count() -> None:
    first = findings_of(_accelerate_paste(4))[0]
    assert first.category == "visible_devices_mismatch"
    assert "gpu_ids" in first.detail


def test_gpu_ids_as_wide_as_the_machine_is_too_many_processes() -> None:
    first = findings_of(_accelerate_paste(2))[0]
    assert first.category == "oversubscribed"


def test_a_query_gpu_csv_table_counts_the_machines_gpus() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document(_accelerate_paste(3))
    assert facts.smi_gpus == 3
    assert facts.segments["smi"] == 1


# --- review 69: short chat-style pastes ----------------------------------------------------------


def test_the_reporters_words_after_the_script_are_prose_not_script_arguments() -> None:
    from rankmap.explain.docread import read_document

    text = (
        "torchrun --nproc_per_node=2 main.py on a box with two GPUs -- every rank hangs and "
        "nvidia-smi lists both procs on GPU 0\n"
    )
    facts = read_document(text)
    assert facts.launch == "torchrun --nproc_per_node=2 main.py"
    assert "all-on-gpu0" in facts.hits
    assert findings_of(text)[0].category == "no_set_device"


def test_one_srun_task_per_node_with_gpu_0_alone_busy_is_the_task_count() -> None:
    text = (
        "#SBATCH --nodes=2 --ntasks-per-node=1 --gpus-per-node=4\n"
        "srun python main.py   (device index comes from SLURM_LOCALID)\n"
        "world size is 2 and only GPU 0 is busy on each node\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "1 process(es) per node on 4 GPU(s)" in first.detail


def test_one_srun_task_per_node_that_runs_out_of_memory_is_no_idle_gpu() -> None:
    # a task may drive every GPU of its node (JAX): an OOM says nothing of idle GPUs
    text = (
        "```\n$ srun -N 2 --ntasks-per-node 1 --gpus-per-node 8 python jax_main.py\n"
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying "
        "to allocate 24051712000 bytes.\n```\n"
    )
    assert all(f.category != "launcher_config" for f in findings_of(text)[:1])


def test_a_renumbering_question_with_the_listed_gpus_busy_in_nvidia_smi_is_no_alarm() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=4,5 torchrun --nproc_per_node=2 main.py\n"
        'the ranks print "cuda:0" and "cuda:1" but nvidia-smi shows the work on GPU 4 and GPU 5. '
        "Are my ranks on the wrong GPUs?\n"
    )
    assert all(f.severity.value == "info" for f in findings_of(text))


def test_a_pod_requesting_two_mig_instances_for_two_workers_is_mig() -> None:
    text = (
        "pod resources: nvidia.com/mig-2g.10gb: 2, Ray Train with num_workers=2 and use_gpu=True\n"
        "(RayTrainWorker pid=77) torch.distributed.DistBackendError: NCCL error in: "
        "ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.20.5\n"
        "Cuda failure 'invalid device ordinal'\n"
    )
    assert findings_of(text)[0].category == "mig"


def test_a_host_numbered_list_said_to_be_set_in_a_pod_is_the_containers_renumbering() -> None:
    text = (
        "in our pod (limits nvidia.com/gpu: 2) torch fails with\n"
        "RuntimeError: No CUDA GPUs are available\n"
        'our manifest sets CUDA_VISIBLE_DEVICES="4,5" since those GPUs were free on the node\n'
    )
    first = findings_of(text)[0]
    assert first.category == "container_mapping"
    assert "host's numbering" in first.detail


def test_a_deepspeed_local_rank_past_the_mpi_slots_per_host_is_one_hostname() -> None:
    text = (
        "two VMs cloned from one image; mpirun -np 8 -H 10.2.0.4:4,10.2.0.5:4 python main.py "
        "--deepspeed ds.json\n"
        "Discovered MPI settings of world_rank=6, local_rank=6, world_size=8, "
        "master_addr=10.2.0.4, master_port=29500\n"
        "[rank6]: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "host_identity"


# --- b25 dev: a renumbering question, the --local-rank rename told in words, Keras's check ------


def test_cuda_0_and_1_of_a_list_of_two_later_gpus_are_those_gpus_renumbered() -> None:
    text = (
        "# CUDA_VISIBLE_DEVICES seems to be ignored\n\n"
        'I exported CUDA_VISIBLE_DEVICES="4,7" before starting the job, yet it only uses GPU:0 '
        "and GPU:1. Why does it not take the GPUs I set?\n"
    )
    found = findings_of(text)
    assert found[0].code == "RM241"
    assert "4,7" in found[0].detail
    assert all(f.severity.value == "info" for f in found)


def test_accelerate_gpu_ids_in_emphasis_are_read_and_renumbered() -> None:
    text = (
        "gpu_ids has no effect\n\nMy config:\n\n**_gpu_ids: '2,3,6,7'_**\n\n"
        "and the four processes print cuda:0, cuda:1, cuda:2 and cuda:3.\n"
    )
    assert findings_of(text)[0].code == "RM241"


def test_a_renumbering_with_a_failure_printed_is_read_as_usual() -> None:
    text = (
        'export CUDA_VISIBLE_DEVICES="4,7"\n'
        "it uses cuda:0 and cuda:1, then:\n\n"
        "```\nTraceback (most recent call last):\n"
        "RuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    assert all(f.code != "RM241" for f in findings_of(text))


def test_an_index_past_the_list_is_no_renumbering() -> None:
    text = (
        "I set CUDA_VISIBLE_DEVICES=2,3 and my code selects cuda:2 and cuda:3. It does not work.\n"
    )
    assert all(f.code != "RM241" for f in findings_of(text))


def test_the_local_rank_rename_told_in_a_title_is_a_launcher_setting() -> None:
    text = "# Scripts reject the unexpected argument `local-rank` under PyTorch 2.0\n\nSee title.\n"
    assert findings_of(text)[0].category == "launcher_config"


def test_keras_multi_gpu_model_asking_for_more_gpus_than_the_process_has() -> None:
    text = (
        "ValueError: To call `multi_gpu_model` with `gpus=4`, we expect the following devices to "
        "be available: ['/cpu:0', '/gpu:0', '/gpu:1', '/gpu:2', '/gpu:3']. However this machine "
        "only has: ['/cpu:0', '/gpu:0']. Try reducing `gpus`.\n"
    )
    assert findings_of(text)[0].category == "oversubscribed"


def test_keras_multi_gpu_model_against_tensorflows_device_names_is_versions() -> None:
    text = (
        "ValueError: To call `multi_gpu_model` with `gpus=2`, we expect the following devices to "
        "be available: ['/cpu:0', '/gpu:0', '/gpu:1']. However this machine only has: "
        "['/device:CPU:0', '/device:GPU:0', '/device:GPU:1']. Try reducing `gpus`.\n"
    )
    assert findings_of(text)[0].category == "version_mismatch"


# --- review 68: whole issue pastes -----------------------------------------------------------------


def test_one_process_named_on_gpu_0_is_no_pile_up() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document("nvidia-smi shows GPUs 0..3 idle except rank 0's process on GPU 0.\n")
    assert "all-on-gpu0" not in facts.hits
    assert "all-on-gpu0" in read_document("I see 3 processes on GPU 0.\n").hits


def test_a_pdsh_prefix_without_a_digit_is_read_where_nccls_prefix_repeats_it() -> None:
    from rankmap.explain.prefix import strip_prefixes

    pre, msg = strip_prefixes("hostA: hostA:311:312 [0] NCCL INFO comm 0x1 rank 0 nranks 2")
    assert pre.host == "hostA" and msg.startswith("NCCL INFO")
    pre, msg = strip_prefixes("Note: this is prose")
    assert pre.host is None


def test_horovodrun_rank_prefix_is_read() -> None:
    from rankmap.explain.prefix import strip_prefixes

    pre, msg = strip_prefixes("[2]<stderr>:box:4520:4610 [0] init.cc:738 NCCL WARN Duplicate GPU")
    assert pre.rank == 2 and pre.host == "box" and msg.startswith("init.cc")


def test_two_machines_of_one_name_under_horovodrun_share_one_host_identity() -> None:
    text = (
        "horovodrun -np 4 -H 10.3.0.50:2,10.3.0.51:2 --gloo python main.py\n"
        "[0]<stdout>:box:8811:8811 [0] NCCL INFO Bootstrap : Using eth0:10.3.0.50<0>\n"
        "[2]<stdout>:box:4520:4520 [0] NCCL INFO Bootstrap : Using eth0:10.3.0.51<0>\n"
        "[2]<stderr>:box:4520:4610 [0] init.cc:738 NCCL WARN Duplicate GPU detected : rank 2 and "
        "rank 0 both on CUDA device 1000\n"
    )
    assert findings_of(text)[0].category == "host_identity"


def test_ray_trains_world_rank_as_the_device_index_is_the_global_rank() -> None:
    text = (
        "```python\nctx = ray.train.get_context()\nrank = ctx.get_world_rank()\n"
        'device = torch.device(f"cuda:{rank}")\ntorch.cuda.set_device(device)\n```\n\n'
        "(RayTrainWorker pid=2311, ip=10.0.0.9) RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "global_rank_as_device"


# --- b25 dev: TensorFlow taking every GPU, a fix told as its change -------------------------------


def test_tensorflow_said_to_take_every_gpu_is_no_device_selection() -> None:
    from rankmap.explain.docread import read_document

    hit = read_document("tensorflow grabs all 4 gpus on the box and my colleague's job died\n")
    assert "procs-on-every-gpu" in hit.hits
    for wish_or_design in (
        "I want TensorFlow to use all GPUs\n",
        "TF uses all 4 GPUs with MirroredStrategy\n",
    ):
        assert "procs-on-every-gpu" not in read_document(wish_or_design).hits


def test_a_fix_that_sets_the_device_before_the_process_group_is_no_set_device() -> None:
    text = "# Fix DDP device choice\n\n- set the CUDA device before creating the process group\n"
    assert findings_of(text)[0].category == "no_set_device"


# --- review 71: false alarms ----------------------------------------------------------------------


def test_a_title_that_tells_the_post_solved_keeps_its_quoted_error_at_info() -> None:
    text = (
        'Re: "invalid device ordinal" on node 2 -- SOLVED\n\n'
        "Last week my job died on the second node with\n\n"
        "    RuntimeError: CUDA error: invalid device ordinal\n\n"
        "because I called set_device(dist.get_rank()). I use LOCAL_RANK now and it has been "
        "running for 2 days. Marking as solved.\n"
    )
    found = findings_of(text)
    assert found[0].category == "global_rank_as_device"
    assert all(f.severity.value == "info" for f in found)


def test_a_how_to_question_that_says_nothing_is_crashing_is_no_alarm() -> None:
    text = (
        "how do I keep my single-process script off GPU 0? It always goes to GPU 0. I have seen "
        "`CUDA_VISIBLE_DEVICES=2 python main.py`. Nothing is crashing, I only ask.\n"
    )
    assert all(f.severity.value == "info" for f in findings_of(text))


def test_one_nccl_node_for_two_machines_told_in_prose_is_one_host_identity() -> None:
    text = (
        "Two containers on two different servers, one GPU each, fail with Duplicate GPU\n\n"
        "box:88:140 [0] NCCL INFO comm 0x1 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0\n"
        "box:91:141 [0] NCCL INFO comm 0x2 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0\n"
        "box:91:141 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
        "CUDA device 41000\n"
    )
    assert findings_of(text)[0].category == "host_identity"


def test_a_pod_spec_list_of_host_ids_beyond_its_limit_is_the_containers_numbering() -> None:
    text = (
        "pod gets 2 GPUs but training fails\n\n```yaml\nspec:\n  containers:\n  - name: t\n"
        '    env:\n    - name: CUDA_VISIBLE_DEVICES\n      value: "6,7"\n    resources:\n'
        "      limits:\n        nvidia.com/gpu: 2\n```\n\n"
        "[rank0]: RuntimeError: CUDA error: invalid device ordinal\n"
        "[rank1]: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "container_mapping"


# --- review 70: logs with flags -------------------------------------------------------------------


def test_a_traceback_under_a_pdsh_prefix_shows_its_source_line() -> None:
    text = (
        "node-b: Traceback (most recent call last):\n"
        'node-b:   File "/srv/main.py", line 118, in <module>\n'
        'node-b:     device = torch.device("cuda", int(os.environ["RANK"]))\n'
        "node-b: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "global_rank_as_device"


def test_a_wrapper_that_prints_each_ranks_own_list_is_per_process() -> None:
    lines = "".join(
        f"[bind] LOCAL_RANK={r} -> export CUDA_VISIBLE_DEVICES={r}, numactl --cpunodebind=0\n"
        for r in range(4)
    )
    text = (
        "$ torchrun --nproc_per_node 4 --no-python ./bind.sh python main.py\n" + lines + "    "
        'torch.cuda.set_device(f"cuda:{local_rank}")\n'
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "per_process_visible_devices"


# --- b26 dev: a host with no GPU; a list of several GPUs with every process on one -------------


def test_no_cuda_device_on_a_cpu_only_node_is_outside_the_mapping() -> None:
    text = (
        "# MPI_Init fails: no CUDA-capable device is detected (CPU only nodes)\n\n"
        "On the CPU-only nodes of our cluster MPI_Init dies with\n\n"
        "CUDA Error (init_hook.c,173): no CUDA-capable device is detected\n"
    )
    found = findings_of(text)
    assert found[0].category == "other"
    assert all(f.category == "other" or f.severity.value == "info" for f in found)


def test_a_list_of_every_gpu_with_all_processes_on_one_is_no_narrowing() -> None:
    from rankmap.explain.combinations import from_combinations
    from rankmap.explain.context import Context
    from rankmap.explain.docread import read_document
    from rankmap.explain.score_model import Scores

    text = (
        "I set CUDA_VISIBLE_DEVICES=0,1,2,3 and start mpirun -np 4 sim --mpi but all processes "
        "are running on the same card.\n"
    )
    s = Scores()
    s.failure = True
    from_combinations(Context(), read_document(text), s, [])
    assert not any(
        "was narrowed" in why for _, why in s.reasons.get("visible_devices_mismatch", [])
    )


def test_per_rank_mig_lists_are_each_processs_own_not_one_list_of_the_job(tmp_path: Path) -> None:
    log = tmp_path / "mig.log"
    log.write_text(
        "[bind] rank 0 -> CUDA_VISIBLE_DEVICES=MIG-11d0c2e4-6f38-5b71-a9e2-0c4d7f1b3e56\n"
        "[bind] rank 1 -> CUDA_VISIBLE_DEVICES=MIG-22e1d3f5-7a49-5c82-b0f3-1d5e8a2c4f67\n"
        "lab:19004:19040 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 81000 "
        "commId 0x6e - Init START\n"
        "lab:19005:19041 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 81000 "
        "commId 0x6e - Init START\n"
        "lab:19005:19041 [0] init.cc:843 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
        "on CUDA device 81000\n"
    )
    report = explain_files([log], launch="mpirun -np 2 ./bind.sh python check.py")
    assert report.ordered_findings()[0].category == "mig"


def test_ranks_on_one_gpu_that_print_local_rank_unset_are_the_launchers_variables() -> None:
    text = (
        "$ mpirun -np 8 -H a:4,b:4 python main.py\n"
        + "".join(f"rank {r} local_rank 0 (LOCAL_RANK=unset)\n" for r in range(4))
        + "a:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x2 "
        "- Init START\n"
        "a:3:4 [0] NCCL INFO comm 0x2 rank 1 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 commId 0x2 "
        "- Init START\n"
        "a:3:4 [0] init.cc:967 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
        "device 18000\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "OMPI_COMM_WORLD_LOCAL_RANK" in first.fix


# --- reviews 67 and 73: CUDA's device order on a machine of mixed GPUs ----------------------------


def _mixed_box(extra: str) -> str:
    return (
        "I set CUDA_VISIBLE_DEVICES=1 to get the A6000, but my process lands on another card.\n\n"
        "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-0a6e...)\n"
        "GPU 1: NVIDIA RTX A6000 (UUID: GPU-9c1f...)\n\n" + extra
    )


def test_a_listed_index_naming_another_card_on_mixed_gpus_is_cudas_device_order() -> None:
    text = _mixed_box("printed: torch.cuda.get_device_name(0) = NVIDIA GeForce RTX 3090\n")
    first = findings_of(text)[0]
    assert first.category == "visible_devices_mismatch"
    assert "of mixed GPU models" in first.detail
    assert first.fix.startswith("export CUDA_DEVICE_ORDER=PCI_BUS_ID")


def test_the_device_order_already_set_to_the_bus_is_not_the_cause() -> None:
    text = "export CUDA_DEVICE_ORDER=PCI_BUS_ID\n" + _mixed_box(
        "printed: torch.cuda.get_device_name(0) = NVIDIA GeForce RTX 3090\n"
    )
    assert all("of mixed GPU models" not in f.detail for f in findings_of(text))


# --- reviews 72 and 73: a launch copied from a bigger machine -------------------------------------


def test_a_list_of_more_gpus_than_the_machine_has_is_more_processes_than_gpus() -> None:
    text = (
        "Our server has 4 V100 GPUs; I copied the 8-GPU command from the docs:\n\n"
        "export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n"
        "python -m paddle.distributed.launch tools/train.py\n\n"
        "OSError: (External) CUDA error(101), invalid device ordinal.\n"
    )
    assert findings_of(text)[0].category == "oversubscribed"


def test_accelerate_num_processes_past_the_machines_gpus_is_more_processes_than_gpus() -> None:
    text = (
        "accelerate on my 2x RTX 4090 box crashes\n\n```yaml\ndistributed_type: MULTI_GPU\n"
        "num_machines: 1\nnum_processes: 8\ngpu_ids: all\n```\n\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "oversubscribed"


def test_a_pasted_batch_scripts_variables_reach_its_launch_line() -> None:
    text = (
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n\n"
        "NNODES=4          # TODO take from slurm\n\n"
        "srun torchrun --nnodes=$NNODES --nproc_per_node=8 --rdzv_backend=c10d "
        "--rdzv_endpoint=$head:29500 main.py\n\n"
        "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert first.fix == "torchrun --nnodes 2 ..."


# --- review 73: Chinese sentences that start with a command; another user's memory ---------------


def test_a_sentence_that_starts_with_a_command_name_in_cjk_is_prose() -> None:
    from rankmap.explain.document import classify_line

    assert classify_line("nvidia-smi 发现 2 号卡上还有一个进程", None) == "prose"
    assert classify_line("nvidia-smi --query-gpu=index --format=csv", None) == "shell"


def test_memory_another_user_holds_is_not_another_rank_of_the_job() -> None:
    text = (
        "vLLM with tensor parallel 4 fails at start\n\n"
        "[rank0]: ValueError: Error in memory profiling. Initial free memory 27.1 GiB, current free "
        "memory 21.6 GiB. This happens when the GPU memory was not properly cleaned up before "
        "initializing the vLLM instance.\n\n"
        "The other process on GPU 2 is a colleague's jupyter notebook; every worker is on its own "
        "GPU.\n"
    )
    assert all(f.category == "other" or f.severity.value == "info" for f in findings_of(text))


def test_mp_spawn_in_pasted_code_under_torchrun_multiplies_the_processes() -> None:
    text = (
        "$ torchrun --nproc_per_node=4 main.py\n\n```python\n"
        "def worker(rank, world_size):\n    torch.cuda.set_device(rank)\n\n"
        'if __name__ == "__main__":\n'
        "    world_size = torch.cuda.device_count()\n"
        "    mp.spawn(worker, args=(world_size,), nprocs=world_size, join=True)\n```\n\n"
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address. The server socket has failed to bind to [::]:12355 (errno: 98 - "
        "Address already in use).\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "drop mp.spawn" in first.fix


# --- a read of this session's diff: each proven problem, restated ---------------------------------


def test_a_pile_up_beside_renumbered_indices_is_no_renumbering_question() -> None:
    text = (
        "export CUDA_VISIBLE_DEVICES=2,3\ntorchrun --nproc_per_node=2 main.py\n"
        "Both ranks end up on cuda:0 instead of cuda:0 and cuda:1, all processes on GPU 0.\n"
    )
    found = findings_of(text)
    assert all(f.code != "RM241" for f in found)
    assert found[0].severity.value != "info"


def test_no_process_on_the_listed_gpus_is_not_the_list_applied() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document("In nvidia-smi there is no process on GPU 2 and GPU 3, they are idle.\n")
    assert facts.smi_told == set()


def test_the_device_order_set_in_code_or_an_index_past_the_listing_is_no_order_problem() -> None:
    listing = (
        "GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-0a6e...)\n"
        "GPU 1: NVIDIA RTX A6000 (UUID: GPU-9c1f...)\n\n"
    )
    in_code = (
        '```python\nos.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"\n```\n\n'
        + listing
        + "I set CUDA_VISIBLE_DEVICES=1 but it runs on the wrong GPU.\n"
    )
    past = listing + "I set CUDA_VISIBLE_DEVICES=5 but it runs on the wrong GPU.\n"
    for text in (in_code, past):
        assert all("of mixed GPU models" not in f.detail for f in findings_of(text))


def test_sentences_that_deny_the_new_shapes_do_not_match_them() -> None:
    from rankmap.explain.docread import read_document

    for sentence, sid in (
        ("We already set the cuda device before creating the process group.", "set-device-missing"),
        ("How can I make Keras use all GPUs?", "procs-on-every-gpu"),
        ("My colleague said each server process would pick a free GPU.", "other-users-process"),
        ("I install the env on the login node without GPUs.", "cpu-only-host"),
        ("I'm on torch 2.1 and my script takes --local-rank from argparse.", "local-rank-renamed"),
    ):
        assert sid not in read_document(sentence + "\n").hits, sentence
    assert "cpu-only-host" in read_document("It runs on nodes without any GPUs.\n").hits


def test_a_hang_that_lasts_or_a_hang_after_nothing_crashing_is_still_a_failure() -> None:
    from rankmap.explain.denial import not_happened, resolved_story

    assert (
        resolved_story("The job has been running for 3 days stuck at the first all_reduce") is None
    )
    assert not not_happened("Nothing is crashing, but the job just hangs after init.", failed=True)


def test_a_missing_master_addr_is_not_a_local_rank_unset() -> None:
    text = (
        "Earlier runs put all 4 processes on GPU 0. Now with mpirun -np 4 python main.py:\n"
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
        "variable MASTER_ADDR expected, but not set\n"
    )
    assert all("OMPI_COMM_WORLD_LOCAL_RANK" not in f.fix for f in findings_of(text)[:1])


def test_script_arguments_that_start_like_a_preposition_stay_arguments() -> None:
    from rankmap.explain.document import classify_line, without_words_after

    cmd = "torchrun --nproc_per_node=4 run.py inference configs/llama.yaml"
    assert without_words_after(cmd) == cmd
    assert classify_line("deepspeed 训练.py --num_gpus 2", None) == "shell"
