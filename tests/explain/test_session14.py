"""Session 14: shapes of reviews 40 (a visible-devices list that is not the cause), 41 (questions
against statements) and 42 (short reports of other stacks), restated in our own words."""

from __future__ import annotations

from pathlib import Path

import pytest
from paste_findings import findings_of

from rankmap.adapters.logs import LocalLogs
from rankmap.explain.denial import asked_what_if, not_happened
from rankmap.explain.engine import explain_files


def _alarms(text: str) -> list[tuple[str, str]]:
    """(code, category) of every mapping finding above info."""
    return [
        (f.code, f.category)
        for f in findings_of(text)
        if f.severity.value != "info" and f.category != "other"
    ]


# --- review 41: a failure asked about before it happened is no failure report ------------------
@pytest.mark.parametrize(
    "text",
    [
        # the message quoted on a line of its own, read as output, and "haven't hit it"
        'What does "CUDA error: invalid device ordinal" mean in multi-GPU jobs? I have not hit '
        "it myself yet; I am writing a troubleshooting page for our wiki.\n",
        "Hypothetically, if a rank called `torch.cuda.set_device(5)` on a 4-GPU node, would "
        "the message be `invalid device ordinal`? It is for the unit tests of our wrapper.\n",
        "Could NCCL tell us when two ranks share a GPU? Something like 'Duplicate GPU "
        "detected'? We've never actually seen it, we only want our CI grep to be right.\n",
        "If I start 12 ranks on a 4-GPU box with set_device(local_rank % 4), would NCCL refuse "
        "to start or just be slow? I'm considering it for a debugging setup.\n",
    ],
)
def test_a_question_about_a_failure_the_writer_has_not_had_raises_no_alarm(text: str) -> None:
    assert _alarms(text) == []


@pytest.mark.parametrize(
    "text",
    [
        "Should LOCAL_RANK be used instead of RANK when picking the GPU? One tutorial shows "
        "one, the docs the other. We run a single node with 8 GPUs today and go multi-node "
        "next month; which one is right in general?\n",
        "Quick question about docker: if I pass `--gpus '\"device=1,2\"'`, will the container "
        "see them as GPU 0 and 1? Would setting CUDA_VISIBLE_DEVICES=1,2 inside be wrong?\n",
    ],
)
def test_what_if_questions_are_asked_not_reported(text: str) -> None:
    assert _alarms(text) == []


def test_a_run_that_works_and_a_wish_to_confirm_raise_no_alarm() -> None:
    text = (
        "Why does nvidia-smi list my job on GPU 2 while PyTorch says cuda:0? Is something "
        "mismatched?\n\n"
        "I run `CUDA_VISIBLE_DEVICES=2 python serve.py`; current_device() prints 0.\n"
        "Throughput is as expected, I just want to confirm nothing is misconfigured.\n"
    )
    assert _alarms(text) == []


def test_a_report_that_says_it_has_never_seen_this_error_before_still_reports_it() -> None:
    # "never seen this before" reports a failure that happens now
    assert not not_happened(
        "I've never seen this error before, it started after the upgrade.", failed=True
    )
    text = (
        "I've never seen this error before, it started today:\n"
        "torchrun --nproc_per_node 8 train.py\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert _alarms(text)


def test_a_plea_for_help_and_a_why_question_are_not_what_if_questions() -> None:
    text = "Can anyone explain why rank 3 fails? Why does it crash? Would that be wrong?"
    assert not asked_what_if(text, text.index("rank 3"), text.index("rank 3") + 6)
    assert not asked_what_if(text, text.index("crash"), text.index("crash") + 5)
    assert asked_what_if(text, text.index("wrong"), text.index("wrong") + 5)


def test_a_question_beside_a_reported_failure_keeps_the_failure() -> None:
    text = (
        "# all ranks on GPU 0\nAll 4 processes run on GPU 0 and the job hangs in the first "
        "allreduce. Should I call set_device before init_process_group?\n"
    )
    assert ("RM345", "no_set_device") in _alarms(text) or any(
        cat == "no_set_device" for _, cat in _alarms(text)
    )


# --- review 40: a visible-devices list that is not the cause ------------------------------------
def test_an_environment_dump_listing_every_gpu_is_no_narrowing() -> None:
    text = (
        "Job: 1 node, 8x A100. I run\n"
        "    mpirun -np 16 --bind-to core ./md -gpus 8\n"
        "Environment printed by the job script:\n"
        "    CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n"
        "    OMP_NUM_THREADS=4\n\n"
        "Output:\n"
        "  will use up to 8 GPU(s) per node\n"
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  cudaSetDevice(8) error( cudaErrorInvalidDevice): invalid device ordinal\n"
        "mpirun noticed that process rank 8 with PID 1234 on node n01 exited on signal 6 (Aborted).\n"
    )
    first = findings_of(text)[0]
    assert (first.category, first.severity.value) == ("oversubscribed", "error")


def test_open_mpis_own_report_is_not_the_launch_command() -> None:
    from rankmap.explain.docread import read_document

    text = (
        "```\nmpirun noticed that process rank 3 with PID 99 on node n2 exited on signal 6.\n```\n"
    )
    assert read_document(text).launch is None


def test_no_gpus_found_by_process_group_nccl_is_a_process_that_sees_no_gpu() -> None:
    text = (
        "The job prints CUDA_VISIBLE_DEVICES='' and then every rank fails:\n"
        "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!\n"
    )
    # not a build without NCCL (that message is "Distributed package doesn't have NCCL")
    assert findings_of(text)[0].category != "version_mismatch"


# --- review 42: another stack's device call with the global rank --------------------------------
def test_hip_or_cuda_set_device_with_the_world_rank_is_the_global_rank() -> None:
    text = (
        "# hipErrorInvalidDevice for ranks 8 and up\n"
        "srun -N 2 -n 16 --gpus-per-node=8 ./app\n"
        "We call `hipSetDevice(world_rank)`. Ranks 8-15: hipErrorInvalidDevice\n"
    )
    assert findings_of(text)[0].category == "global_rank_as_device"


def test_chinese_uneven_gpu_memory_is_the_english_unbalanced_signal() -> None:
    first = findings_of("foo/bar · issue #1 · closed\n# 多卡训练显存占用不均衡\n")[0]
    assert first.category == "no_set_device"


def test_a_device_never_selected_per_process_told_in_words() -> None:
    for text in (
        "We don't set a device per process before init_process_group, and the job hangs.\n",
        "The ranks all land on one GPU: we never pin each rank to its GPU.\n",
    ):
        assert findings_of(text)[0].category == "no_set_device", text


def test_two_machines_with_one_hostname_told_with_words_between() -> None:
    text = (
        "# horovodrun: ranks 4-7 fail with invalid device ordinal\n"
        "Both VMs were cloned from a single image and have hostname localhost.localdomain.\n"
        "horovodrun -np 8 -H 10.0.0.5:4,10.0.0.6:4 python train.py\n"
        "[1,5]<stderr>:RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "host_identity"


def test_an_older_jaxlibs_built_against_a_newer_cuda_is_a_version_mismatch() -> None:
    text = (
        "RuntimeError: Unable to initialize backend 'cuda': FAILED_PRECONDITION: CUDA backend "
        "failed to initialize: Found cuDNN version 8600, but JAX was built against version "
        "8800, which is newer.\n"
    )
    assert findings_of(text)[0].category == "version_mismatch"


# --- reviews 43 and 44 ---------------------------------------------------------------------------
def test_processes_on_gpu_0_and_gpu_1_name_two_gpus_not_a_pile_up() -> None:
    text = "Both processes run on GPU 0 and GPU 1 (nvidia-smi), not on 2 and 3 as configured.\n"
    assert all(f.category != "no_set_device" for f in findings_of(text))
    assert findings_of("All 4 processes run on GPU 0.\n")[0].category == "no_set_device"
    # ... but GPU 0 against the others said to be idle is the pile-up
    idle = "nvidia-smi shows 8 python processes on GPU 0 and GPUs 1-7 are empty.\n"
    assert findings_of(idle)[0].category == "no_set_device"


def test_a_traceback_that_selects_the_local_rank_is_no_global_rank_on_two_nodes(
    tmp_path: Path,
) -> None:
    log = (
        "[1,6]<stderr>:Traceback (most recent call last):\n"
        '[1,6]<stderr>:  File "/w/train.py", line 148, in <module>\n'
        "[1,6]<stderr>:    torch.cuda.set_device(hvd.local_rank())\n"
        "[1,6]<stderr>:RuntimeError: CUDA error: invalid device ordinal\n"
    )
    path = tmp_path / "job.log"
    path.write_text(log)
    report = explain_files(
        [path], launch="mpirun -np 16 -npernode 8 -H a:8,b:8 python train.py", logs=LocalLogs()
    )
    assert report.ordered_findings()[0].category == "oversubscribed"


def test_a_pdsh_prefixed_code_line_of_a_traceback_is_output_not_prose() -> None:
    text = (
        "node-2: [rank8]: Traceback (most recent call last):\n"
        'node-2: [rank8]:   File "/data/pretrain.py", line 96, in <module>\n'
        "node-2: [rank8]:     model = DDP(model.cuda(args.rank), device_ids=[args.rank])\n"
        "node-2: [rank8]: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "global_rank_as_device"


# --- reviews 46 and 47 ---------------------------------------------------------------------------
def test_an_unrecognized_argument_of_the_users_own_is_no_launcher_problem() -> None:
    text = (
        "torchrun --nproc_per_node 2 train.py --lr_sched cosine\n\n"
        "train.py: error: unrecognized arguments: --lr_sched cosine\n"
        "train.py: error: unrecognized arguments: --lr_sched cosine\n"
    )
    assert _alarms(text) == []
    launcher = "train.py: error: unrecognized arguments: --local-rank=3\n"
    assert findings_of(launcher)[0].category == "launcher_config"


def test_nccl_counting_one_node_for_a_two_node_launch_is_one_host_identity() -> None:
    text = (
        "Two nodes of 8 GPUs, torchrun --nnodes=2 --nproc_per_node=8, NCCL_DEBUG=INFO:\n\n"
        "n:11:11 [0] NCCL INFO NCCL version 2.19.3+cuda12.3\n"
        "n:11:90 [0] NCCL INFO comm 0x5 rank 0 nRanks 16 nNodes 1 localRanks 16 localRank 0 "
        "MNNVL 0\n"
        "n:18:95 [7] transport/p2p.cc:288 NCCL WARN Cuda failure 'invalid device context'\n"
        "torch.distributed.DistBackendError: NCCL error ... unhandled cuda error\n"
    )
    assert findings_of(text)[0].category == "host_identity"


def test_a_rank_as_device_in_pasted_code_on_one_machine_is_no_global_rank() -> None:
    text = (
        "In my DDP script I do\n```\nrank = dist.get_rank()\nmodel.to(rank)\n```\n"
        "on a single 4 GPU machine. It works but the memory on gpu0 is much higher than on the "
        "others. Is it expected?\n"
    )
    assert findings_of(text)[0].category == "no_set_device"


def test_chinese_card_zero_holding_several_processes_is_the_pile_up() -> None:
    assert findings_of("多卡训练时 0 号卡上有 8 个进程\n")[0].category == "no_set_device"


def test_nccl_tests_own_nccl_failure_line_is_a_failure() -> None:
    text = "node1: Test NCCL failure common.cu:1005 'invalid usage (run with NCCL_DEBUG=WARN)'\n"
    first = findings_of(text)[0]
    assert first.code != "RM003" and first.severity.value != "info"


# --- review 49 -----------------------------------------------------------------------------------
def test_a_symptom_the_writer_rules_out_is_no_evidence() -> None:
    text = (
        "I printed the devices: rank 0 cuda:0 ... rank 3 cuda:3, so it's not the \"everything "
        'on GPU 0" problem, each GPU is simply full.\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a "
        "total capacity of 23.6 GiB\n"
    )
    assert _alarms(text) == []


def test_a_checkpoint_opened_on_a_cpu_machine_is_no_hidden_gpu() -> None:
    text = (
        "RuntimeError: Attempting to deserialize object on a CUDA device but "
        "torch.cuda.is_available() is False. If you are running on a CPU-only machine, please "
        "use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.\n"
    )
    assert _alarms(text) == []


def test_a_setting_denied_before_a_symptom_does_not_take_the_symptom_back() -> None:
    # "do not set CUDA_VISIBLE_DEVICES" denies a setting; the symptom after it still counts
    text = (
        "Two pods each requesting nvidia.com/gpu: 1 end up on the same physical GPU. Inside "
        "each pod nvidia-smi -L lists all four GPUs. The pods do not set CUDA_VISIBLE_DEVICES "
        "at all. Any idea why the device plugin's assignment isn't respected?\n"
    )
    assert findings_of(text)[0].category == "container_mapping"


def test_a_duplicate_gpu_between_two_machines_said_to_share_a_hostname() -> None:
    text = (
        'Two cloud VMs cloned from one image, both have hostname "gpu-vm". A two-node job, one '
        "GPU each:\n\n"
        "gpu-vm:31:31 [0] NCCL INFO comm 0x55 rank 0 nranks 2 cudaDev 0 busId 100000 - Init START\n"
        "gpu-vm:28:28 [0] NCCL INFO comm 0x56 rank 1 nranks 2 cudaDev 0 busId 100000 - Init START\n"
        "gpu-vm:28:28 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
        "on CUDA device 100000\n"
    )
    assert findings_of(text)[0].category == "host_identity"
