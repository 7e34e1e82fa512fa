"""Session 13: shapes of the fresh dev parts of batches b18 and b19 and of this session's
reviews, restated here in our own words."""

from __future__ import annotations

import pytest
from paste_findings import findings_of


def test_deepspeed_slot_error_retyped_without_quotes_is_still_the_launcher() -> None:
    # reporters retype the launcher's message and drop its quotes
    text = (
        "# train fails\nuser · description\nI get No slot '3' specified on host localhost, why?\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category, first.severity.value) == (
        "RM940",
        "launcher_config",
        "error",
    )


def test_a_job_that_uses_fewer_gpus_than_it_sees_was_started_with_fewer_processes() -> None:
    text = (
        "# Training uses only 2 gpus\n"
        "However many GPUs I expose with CUDA_VISIBLE_DEVICES, training only uses 2 GPUs.\n"
    )
    first = findings_of(text)[0]
    # the cause, named; a count of GPUs in use is no failure by itself (review 35: "I'm only
    # using 2 GPUs for now" describes a setup), so no alarm
    assert (first.category, first.severity.value) == ("launcher_config", "info")


def test_a_setup_described_with_a_gpu_count_raises_no_alarm() -> None:
    text = (
        "To keep it small I'm only using 2 GPUs for now:\n"
        "```\nCUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py\n```\n"
        "[E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout\n"
    )
    assert all(f.severity.value == "info" or f.category == "other" for f in findings_of(text))


def test_two_gpus_per_process_is_not_a_job_that_uses_fewer_gpus() -> None:
    text = "# question\nEach worker only uses 2 GPUs per process by design; is NVLink used?\n"
    assert all(f.category != "launcher_config" for f in findings_of(text))


def test_an_engine_sharded_over_fewer_gpus_than_visible_runs_out_of_memory_on_one() -> None:
    text = (
        "### Reproduction\n\n"
        "CUDA_VISIBLE_DEVICES=0,1,2,3 text-generation-launcher --model-id big-model --num-shard 1"
        "  does not use all cards. Error on GPU 0 OutOfMemoryError: CUDA out of memory.\n"
    )
    first = findings_of(text)[0]
    assert (first.category, first.severity.value) == ("launcher_config", "warning")
    assert "engine uses 1" in first.title + first.detail


def test_an_engine_sharded_over_every_visible_gpu_that_runs_out_of_memory_is_no_mapping() -> None:
    text = (
        "```\n$ CUDA_VISIBLE_DEVICES=0,1 vllm serve big-model --tensor-parallel-size 2\n```\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert all(f.category == "other" or f.severity.value == "info" for f in findings_of(text)), (
        findings_of(text)
    )


_LAUNCH_ONE_OF_EIGHT = (
    "# multi-GPU training always runs out of memory\n"
    "my launch script:\n"
    "#!/bin/bash\n"
    "python -m torch.distributed.launch \\\n"
    "    --nproc_per_node 1 \\\n"
    "    train.py --device 0,1,2,3,4,5,6,7 --batch-size 64\n"
    "\n"
    "The machine has 8 GPUs with 24G memory each.\n"
)


def test_unfenced_backslash_continuations_are_one_command() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document(_LAUNCH_ONE_OF_EIGHT)
    assert facts.launch is not None and "--nproc_per_node 1" in facts.launch


def test_one_process_per_node_on_eight_gpus_that_runs_out_of_memory_is_the_launch() -> None:
    first = findings_of(_LAUNCH_ONE_OF_EIGHT)[0]
    assert (first.category, first.severity.value) == ("launcher_config", "warning")
    assert "1 process(es) per node on 8 GPU(s)" in first.detail


def test_a_launch_that_uses_every_gpu_and_runs_out_of_memory_is_no_launch_problem() -> None:
    text = _LAUNCH_ONE_OF_EIGHT.replace("--nproc_per_node 1", "--nproc_per_node 8")
    assert all(f.category != "launcher_config" for f in findings_of(text))


def test_a_gpu_of_a_profile_is_named_on_the_host_the_log_names(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from rankmap.cli import main

    log = tmp_path / "dup.log"
    log.write_text(
        "nodeA:11:20 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init START\n"
        "nodeA:12:21 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 18000 - Init START\n"
        "nodeA:12:21 [0] init.cc:775 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
        "on CUDA device 18000\n"
    )
    assert main(["explain", str(log), "--machine", "dgx-h100"]) == 1
    out = capsys.readouterr().out
    assert "nvidia-smi GPU 0 on nodeA (per profile dgx-h100-01" in out


# review 31: shapes of issue-template pastes (accelerate / transformers / Lightning / docker)
_ENV_DUMP = (
    "### System Info\n\n"
    "- `Accelerate` version: 0.30.0\n"
    "- `Accelerate` default config:\n"
    "\t- compute_environment: LOCAL_MACHINE\n"
    "\t- distributed_type: MULTI_GPU\n"
    "\t- num_processes: 4\n"
    "- Accelerate config: not found\n\n"
)


def test_an_environment_dump_is_no_launcher_evidence() -> None:
    from rankmap.explain.docread import read_document

    assert "accelerate-config" not in read_document(_ENV_DUMP).hits
    pasted_config = (
        "my default_config.yaml:\n```yaml\ndistributed_type: MULTI_GPU\nnum_processes: 4\n```\n"
    )
    assert "accelerate-config" in read_document(pasted_config).hits


def test_visible_devices_set_in_python_from_the_local_rank_is_per_process() -> None:
    text = (
        "```python\nimport os\n"
        'os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("LOCAL_RANK", "0")\n'
        "import torch\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n```\n"
        "torchrun --nproc_per_node 4 train.py\n"
        "```\n[rank2]: RuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert first.category == "per_process_visible_devices", first


def test_lightning_asking_for_as_many_gpus_by_physical_ids_is_the_renumbering() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=2,3 python fit.py\n"
        "lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [2, 3]\n"
        " But your machine only has: [0, 1]\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM240", "visible_devices_mismatch")
    assert "devices=[0, 1]" in first.fix
    # more GPUs asked for than visible stays a count problem
    more = text.replace("[2, 3]", "[0, 1, 2]")
    assert findings_of(more)[0].code != "RM240"


def test_host_gpu_ids_passed_into_a_container_given_a_subset_are_the_container() -> None:
    text = (
        "```\ndocker run --rm --gpus '\"device=4,5\"' -e CUDA_VISIBLE_DEVICES=4,5 img "
        "torchrun --nproc_per_node 2 train.py\n```\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    first = findings_of(text)[0]
    assert first.category == "container_mapping", first
    fine = text.replace("CUDA_VISIBLE_DEVICES=4,5", "CUDA_VISIBLE_DEVICES=0,1")
    assert not any("numbered 0..1 inside" in f.detail for f in findings_of(fine))


def test_a_store_bound_to_an_address_the_machine_does_not_own_names_the_node_rank() -> None:
    text = (
        "[W socket.cpp:697] [c10d] The server socket has failed to bind to 10.1.2.3:29500 "
        "(errno: 99 - Cannot assign requested address).\n"
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address.\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM906", "launcher_config")
    assert "node rank" in first.fix


# review 32: Slurm, ROCm and NCCL logs with flags (shapes restated here)
def _log_findings(tmp_path, text: str, launch: str, **env: str):  # type: ignore[no-untyped-def]
    from rankmap.adapters.local import explain_files

    log = tmp_path / "job.log"
    log.write_text(text)
    return explain_files([log], launch=launch, env=env).ordered_findings()


def test_srun_tasks_each_running_torchrun_is_the_launch_not_a_port(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = "".join(
        f"{t}: torch.distributed.DistNetworkError: The server socket has failed to listen on any "
        "local network address. port: 29500, useIPv6: 0, code: -98, name: EADDRINUSE\n"
        for t in (1, 2, 3)
    )
    launch = "srun -l --ntasks-per-node=4 torchrun --nproc_per_node=4 train.py"
    first = _log_findings(tmp_path, text, launch)[0]
    assert (first.category, first.severity.value) == ("launcher_config", "warning")
    assert "16 processes per node" in first.detail


def test_a_visible_list_that_is_the_slurm_allocation_is_oversubscription(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = (
        "SLURM_GPUS_ON_NODE=2\nCUDA_VISIBLE_DEVICES=0,1\n"
        "n1:10:10 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 busId 7000 - Init START\n"
        "n1:11:11 [0] NCCL INFO comm 0x2 rank 2 nranks 4 cudaDev 0 busId 7000 - Init START\n"
        "n1:11:11 [0] init.cc:775 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on "
        "CUDA device 7000\n"
    )
    first = _log_findings(tmp_path, text, "srun -l --ntasks-per-node=4 python train.py")[0]
    assert first.category == "oversubscribed", first


def test_processes_printing_their_own_visible_list_in_python_see_one_gpu_each(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = "".join(
        f"[worker {r}] os.environ['CUDA_VISIBLE_DEVICES']='{r}' -> device_count=1\n"
        for r in range(4)
    ) + ("    torch.cuda.set_device(rank)\nRuntimeError: CUDA error: invalid device ordinal\n")
    first = _log_findings(tmp_path, text, "python spawn.py")[0]
    assert first.category == "per_process_visible_devices", first


def test_exports_and_a_launch_in_one_block_are_a_script() -> None:
    text = (
        "### Command\n```\nexport CUDA_VISIBLE_DEVICES=0,1\n"
        "srun -l --ntasks-per-node=4 python train.py\n```\n"
        "```\n2: RuntimeError: CUDA error: invalid device ordinal\n"
        "3: RuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM201", "visible_devices_mismatch")
    assert first.ranks == (2, 3)


def test_srun_labels_name_the_failing_tasks_and_cancelled_steps_do_not(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = "".join(
        f"{t}: RuntimeError: CUDA error: invalid device ordinal\n" for t in (1, 2, 3)
    ) + ("0: slurmstepd: error: *** STEP 42.0 ON gn1 CANCELLED AT 2025-01-01T00:00:00 ***\n")
    launch = "srun -l --ntasks-per-node=4 --gpus-per-task=1 python train.py"
    assert _log_findings(tmp_path, text, launch)[0].ranks == (1, 2, 3)
    # without --label the numbers are no task ids
    unlabelled = launch.replace(" -l", "")
    assert _log_findings(tmp_path, text, unlabelled)[0].ranks != (1, 2, 3)
    # Slurm pads labels to the widest task id (" 3: " among 16 tasks)
    padded = "".join(f" {t}: RuntimeError: CUDA error: invalid device ordinal\n" for t in (3, 5))
    wide = "srun -l --ntasks-per-node=16 python train.py"
    assert _log_findings(tmp_path, padded, wide)[0].ranks == (3, 5)


def test_srun_task_summary_names_ranks_only_where_srun_runs_the_program(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = (
        "RuntimeError: CUDA error: invalid device ordinal\n"
        "srun: error: gn2: task 1: Exited with exit code 1\n"
    )
    direct = _log_findings(tmp_path, text, "srun -l --ntasks-per-node=4 python train.py")[0]
    assert direct.ranks == (1,)
    # under srun that runs torchrun, task 1 is node 1's agent, not rank 1
    nested = "srun -l --nodes 2 --ntasks-per-node=1 torchrun --nnodes 2 --nproc_per_node 8 train.py"
    assert _log_findings(tmp_path, text, nested)[0].ranks != (1,)


def test_a_later_node_on_devices_equal_to_global_ranks_uses_the_global_rank(tmp_path) -> None:  # type: ignore[no-untyped-def]
    lines = [
        ("hA", 0, 0, "7000"),
        ("hA", 1, 1, "f000"),
        ("hB", 2, 2, "47000"),
        ("hB", 3, 3, "4e000"),
    ]
    text = "".join(
        f"{h}:{100 + r}:{200 + r} [{c}] NCCL INFO comm 0x{r}1 rank {r} nranks 4 cudaDev {c} "
        f"nvmlDev {c} busId {b} commId 0xabc - Init START\n"
        for h, r, c, b in lines
    )
    text += "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Process 881 has 69 GiB in use.\n"
    first = _log_findings(tmp_path, text, "torchrun --nnodes=2 --nproc_per_node=2 train.py")[0]
    assert (first.code, first.category, first.ranks) == ("RM401", "global_rank_as_device", (2, 3))
    assert first.devices == ("0000:47:00.0", "0000:4E:00.0")
    healthy = text.replace("cudaDev 2 nvmlDev 2", "cudaDev 0 nvmlDev 0").replace(
        "cudaDev 3 nvmlDev 3", "cudaDev 1 nvmlDev 1"
    )
    assert all(f.code != "RM401" for f in _log_findings(tmp_path, healthy, "torchrun train.py"))


def test_a_sentence_hard_wrapped_over_lines_is_read_as_one() -> None:
    from rankmap.explain.docread import read_document, unwrapped

    text = (
        "# fix device selection\n"
        "When a GPU is pre-assigned to every MPI rank by the batch system\n"
        "with the variable `CUDA_VISIBLE_DEVICES`, the current code picks the\n"
        "host-local rank as the device and fails.\n"
    )
    assert len(unwrapped(text)) == len(text)
    facts = read_document(text)
    assert "scheduler-sets-cvd" in facts.hits
    # the quote and line number are those of the paste
    assert facts.hits["scheduler-sets-cvd"].where == "<stdin>:2"
    # indented records are not sentences: "rank : 0 (local_rank: 0)" stays its own line
    record = "  rank      : 0 (local_rank: 0) on host node-a-0.example.internal\n  exitcode  : 1\n"
    assert unwrapped(record) == record


def test_a_prose_line_starting_with_with_is_no_code() -> None:
    from rankmap.explain.document import classify_line

    assert classify_line("with environment variable CUDA_VISIBLE_DEVICES than the", "prose") == (
        "prose"
    )
    assert classify_line("with open(path) as f:", None) == "code"


def test_a_pytorch_build_without_nccl_on_a_windows_path_is_the_platform() -> None:
    text = (
        "# training fails on my laptop\n"
        '  File "C:\\\\env\\\\lib\\\\site-packages\\\\torch\\\\distributed\\\\distributed_c10d.py", line 1013\n'
        "RuntimeError: Distributed package doesn't have NCCL built in\n"
    )
    first = findings_of(text)[0]
    # (session 19: the C:\\ path into site-packages is a Windows machine, whose PyTorch wheels
    # carry no NCCL: the platform, not a build to reinstall — every dev thread of b21-b27 with the
    # message ran on Windows)
    assert (first.category, first.severity.value) == ("other", "warning")
    assert "gloo" in first.fix


# review 33: Chinese prose around English logs (sentences written here)
@pytest.mark.parametrize(
    ("sentence", "signal"),
    [
        ("训练时只有第一张卡显存上涨，其他卡都是空的", "all-on-gpu0"),
        ("显存全堆在0号卡上", "all-on-gpu0"),
        ("启动后只用了一张卡", "one-gpu-used"),
        ("不管怎么设置都只用了两张卡", "some-gpus-used"),
        ("两台机器的 hostname 都一样", "same-hostname"),
        ("两个节点的 NODE_RANK 都写成了 0", "ranks-duplicated"),
        ("每个进程只能看到一张卡", "one-gpu-per-proc"),
    ],
)
def test_chinese_phrasings_of_a_symptom_are_the_same_signal(sentence: str, signal: str) -> None:
    from rankmap.explain.docread import read_document

    assert signal in read_document(f"# 多卡训练报错\n{sentence}\n").hits


def test_a_chinese_card_count_of_the_machine_wins_over_the_jobs() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document("# 4卡训练报错\n机器上是两块 A100\n")
    assert facts.stated_gpus == 2
    assert read_document("# 4卡训练报错\n").stated_gpus == 4
    # "only one card is used" and "the first card" are no counts
    assert read_document("# 报错\n只用了一张卡，第一张卡满了\n").stated_gpus is None


def test_a_chinese_report_of_every_rank_on_card_0_is_no_set_device() -> None:
    text = "# DDP 训练报错\n用 torchrun 启动 4 个进程，结果显存全堆在0号卡上，然后 OOM 了\n"
    first = findings_of(text)[0]
    assert first.category == "no_set_device", first


def test_a_launch_loop_giving_each_process_its_own_gpu_is_per_process() -> None:
    text = (
        "rank 1+ crash, rank 0 ok\n```bash\nfor i in 0 1 2 3; do\n"
        "  CUDA_VISIBLE_DEVICES=$i LOCAL_RANK=$i RANK=$i WORLD_SIZE=4 python serve.py &\n"
        "done\nwait\n```\n```python\ndevice = torch.device(f\"cuda:{int(os.environ['LOCAL_RANK'])}\")\n```\n"
        "```\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert first.category == "per_process_visible_devices", first
    # a list variable is no per-process GPU
    from rankmap.explain.docread import read_document

    assert "cvd-per-rank" not in read_document("CUDA_VISIBLE_DEVICES=$gpus torchrun a.py\n").hits


# review 35: the session's own rules, held back where the evidence is not there
def test_a_multi_node_gpu_total_is_no_launch_below_the_gpus() -> None:
    text = (
        "We train on 16 GPUs (2 nodes x 8 H100).\n"
        "```\ntorchrun --nnodes 2 --nproc_per_node 8 train.py\n```\n"
        "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert findings_of(text)[0].category == "other"
    pinned = (
        "The machine has 8 A100 GPUs, I pin one.\n"
        "```\nCUDA_VISIBLE_DEVICES=3 torchrun --nproc_per_node 1 train.py\n```\n"
        "torch.OutOfMemoryError: CUDA out of memory.\n"
    )
    assert findings_of(pinned)[0].category == "other"


def test_pipeline_and_data_parallel_sizes_count_in_the_gpus_an_engine_uses() -> None:
    text = (
        "```\nCUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve m --tensor-parallel-size 2 "
        "--pipeline-parallel-size 2\n```\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    )
    assert findings_of(text)[0].category != "launcher_config"


def test_every_command_with_a_visible_list_and_a_parallel_size_is_judged() -> None:
    text = (
        "this works:\n```\nCUDA_VISIBLE_DEVICES=0,1 vllm serve a --tensor-parallel-size 2\n```\n"
        "this fails:\n```\nCUDA_VISIBLE_DEVICES=2 vllm serve b --tensor-parallel-size 2\n```\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    first = findings_of(text)[0]
    assert first.category == "visible_devices_mismatch", first


def test_a_gpu_count_given_to_a_container_names_no_ids() -> None:
    text = (
        "```\ndocker run --rm --gpus 2 -e CUDA_VISIBLE_DEVICES=0,1 img torchrun "
        "--nproc_per_node 2 train.py\n```\nNCCL error: unhandled system error\n"
    )
    assert not any("numbered 0..1 inside" in f.detail for f in findings_of(text))


def test_lightning_ids_beyond_the_machine_without_a_narrowed_view_stay_oversubscribed() -> None:
    text = (
        "Our workstation has 4 GPUs; Trainer(devices=[4, 5])\n"
        "MisconfigurationException: You requested gpu: [4, 5]\n"
        " But your machine only has: [0, 1, 2, 3]\n"
    )
    assert findings_of(text)[0].code != "RM240"


def test_a_loopback_bind_with_errno_99_is_no_node_rank_question() -> None:
    text = (
        "[W socket.cpp:697] [c10d] The server socket has failed to bind to [localhost]:29500 "
        "(errno: 99 - Cannot assign requested address).\n"
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address.\n"
    )
    assert all("node rank" not in f.fix for f in findings_of(text))


def test_a_slurm_gpu_count_that_is_a_list_or_huge_is_no_count(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from rankmap.explain.patterns import recognise
    from rankmap.explain.reader import Line

    def counted(value: str) -> list[str | None]:
        line = Line(f"SLURM_GPUS_ON_NODE={value}", "job.log", 1)
        return [e.get("count") for e in recognise(line) if e.kind == "slurm_gpus"]

    assert counted("4") == ["4"]
    assert counted("0,1") == [] and counted("9" * 5000) == []
    # and explain reads such a log without failing
    log = "SLURM_GPUS_ON_NODE=0,1\nCUDA_VISIBLE_DEVICES=0,1\n"
    assert _log_findings(tmp_path, log, "srun --ntasks-per-node=4 python train.py")


def test_a_later_node_rule_names_every_node_it_finds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = "".join(
        f"{h}:{r}:{r} [{r}] NCCL INFO comm 0x{r} rank {r} nranks 3 cudaDev {r} nvmlDev {r} busId "
        f"{b} commId 0xa - Init START\n"
        for h, r, b in (("hA", 0, "7000"), ("hB", 1, "8000"), ("hC", 2, "9000"))
    )
    found = [f for f in _log_findings(tmp_path, text, "torchrun train.py") if f.code == "RM401"]
    assert found and found[0].ranks == (1, 2) and found[0].hosts == ("hB", "hC")


# review 36: questions about setups that work, and outside failures with mapping words
def test_a_question_about_a_working_mig_setup_raises_no_alarm() -> None:
    text = (
        "**Question**\nI split an A100 into 3g.40gb + 2g.20gb + 1g.10gb, one server per slice. "
        "Each works:\n```\n$ nvidia-smi -L\nGPU 0: NVIDIA A100-SXM4-80GB (UUID: "
        "GPU-11111111-2222-3333-4444-555555555555)\n  MIG 3g.40gb     Device  0: (UUID: "
        "MIG-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee)\n```\n"
        "Is there a way to give the 1g.10gb slice to a pod instead of running it on the host?\n"
    )
    assert all(f.severity.value == "info" for f in findings_of(text) if f.category != "other")


def test_every_gpu_with_its_own_rank_and_worker_is_no_pile_up() -> None:
    rows = "".join(
        f"|    {g}   N/A  N/A     61120{g}      C   python                20810MiB |\n"
        f"|    {g}   N/A  N/A     61130{g}      C   python                  512MiB |\n"
        for g in range(4)
    )
    text = (
        "After Ctrl-C nvidia-smi still shows processes:\n```\n" + rows + "```\nHow to clean up?\n"
    )
    from rankmap.explain.docread import read_document

    assert read_document(text).shared_gpu is None
    two_on_zero = (
        "```\n|    0   N/A  N/A     1001      C   python   20810MiB |\n"
        "|    0   N/A  N/A     1002      C   python   20810MiB |\n"
        "|    1   N/A  N/A     1003      C   python   20810MiB |\n```\n"
    )
    assert read_document(two_on_zero).shared_gpu is not None


def test_ipc_named_in_a_question_about_a_working_job_is_no_failure() -> None:
    text = (
        "Not a bug report, just a question. Job works:\n```bash\n#SBATCH --nodes=2 "
        "--ntasks-per-node=4 --gpus-per-task=1\nsrun python train.py\n```\n"
        "I read that per-task binding can disable CUDA IPC / P2P between ranks. Still a concern?\n"
    )
    assert all(f.severity.value == "info" for f in findings_of(text) if f.category != "other")


def test_a_cpu_only_pytorch_build_is_the_build_not_a_missing_set_device() -> None:
    text = (
        "[rank0]:     torch.cuda.set_device(local_rank)\n"
        "[rank0]: AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'\n"
    )
    assert findings_of(text)[0].category == "version_mismatch"


# review 38: Chinese negations, "stuck", "fine with one card"; engines' parallel sizes
@pytest.mark.parametrize(
    "text",
    [
        "我确认了显存不是全堆在0号卡上，四张卡的显存占用差不多。\n",
        "我确认了显存没有全都堆在0号卡上\n",
        "两台机器 hostname 都一样吗？我查了一下并不一样\n",
    ],
)
def test_a_chinese_negation_or_question_takes_the_symptom_back(text: str) -> None:
    from rankmap.explain.docread import read_document

    hits = read_document(text).hits
    assert "all-on-gpu0" not in hits and "same-hostname" not in hits


def test_stuck_is_no_card_count_and_fine_with_one_card_is_no_symptom() -> None:
    from rankmap.explain.docread import read_document

    assert read_document("训练到 epoch 2 卡住了，没有任何报错\n").stated_gpus is None
    facts = read_document("8卡机器，只用一张卡的时候正常\n")
    assert facts.stated_gpus == 8 and "one-gpu-used" not in facts.hits


@pytest.mark.parametrize(
    ("command", "gpus"),
    [
        ("CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 python -m sglang.launch_server --tp 8 --dp 8 "
         "--enable-dp-attention", 8),
        ("CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve M --tensor-parallel-size 2 "
         "--data-parallel-size 4 --data-parallel-size-local 2", 4),
        ("CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve M --tensor-parallel-size 2 --pp 2 --pp 1", 2),
    ],
)  # fmt: skip
def test_an_engine_counts_its_gpus_on_this_node(command: str, gpus: int) -> None:
    from rankmap.explain.docread import read_document

    assert read_document(f"```\n{command}\n```\n").parallel_visible[0][1] == gpus


def test_a_shell_variable_is_no_one_entry_visible_list() -> None:
    text = (
        '```\nfor pair in "0,1" "2,3"; do\n  CUDA_VISIBLE_DEVICES=$pair torchrun '
        "--nproc_per_node 2 train.py &\ndone\n```\n"
        "RuntimeError: NCCL error: unhandled system error\n"
    )
    assert all(
        f.category not in ("per_process_visible_devices", "visible_devices_mismatch")
        or f.severity.value == "info"
        for f in findings_of(text)
    )


def test_a_job_request_slurm_refuses_at_submission_is_no_mapping_fault() -> None:
    text = (
        "$ sinteractive -t 1:00:00 --gres=gpu:p100:1\n"
        "sbatch: error: Batch job submission failed: Requested node configuration is not available\n"
    )
    assert all(f.severity.value == "info" or f.category == "other" for f in findings_of(text))
    # a step inside the allocation asking for GPUs another step holds still points at the launch
    step = (
        "srun: Job step creation temporarily disabled, retrying (Requested nodes are busy)\n"
        "srun: error: Unable to create step for job 42: Requested node configuration is not "
        "available\n"
    )
    assert findings_of(step)[0].category == "launcher_config"
