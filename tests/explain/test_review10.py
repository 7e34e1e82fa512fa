"""Review 10: whole pastes where prose that reassures, a display process or a library's
TypeError was read as the mapping's failure."""

from __future__ import annotations

from pathlib import Path

from paste_findings import alarms_of, findings_of

# the desktop table of the doctor tests (two display processes on GPU 0) with two ranks running
SMI = (Path(__file__).parents[1] / "data" / "smi" / "desktop_4090_display_procs.txt").read_text()
SMI = SMI.replace(
    "80MiB |\n+",
    "80MiB |\n"
    "|    0   N/A  N/A     41102      C   python                                    19914MiB |\n"
    "|    1   N/A  N/A     41103      C   python                                    19914MiB |\n+",
)
assert "41103" in SMI  # the two ranks were added to the shared table


def test_display_processes_on_gpu0_are_no_ranks_sharing_it() -> None:
    text = "# Training is slow\n\nNo errors, just slow. nvidia-smi:\n\n```\n" + SMI + "```\n"
    assert not alarms_of(text)
    two_jobs = SMI.replace("1903      G   /usr/bin/gnome-shell ", "1903      C   python           ")
    assert two_jobs != SMI
    shared = "# Training is slow\n\n```\n" + two_jobs + "```\n"
    assert findings_of(shared)[0].category == "no_set_device"


def test_a_library_api_break_is_no_launcher_option() -> None:
    text = (
        "# Training fails after upgrading transformers\n\n"
        "`deepspeed --num_gpus 4 train.py --deepspeed ds.json`\n\n```\n"
        "Traceback (most recent call last):\n"
        "TypeError: TrainingArguments.__init__() got an unexpected keyword argument "
        "'evaluation_strategy'\n```\n"
    )
    assert not alarms_of(text)
    forwarded = text.replace("'evaluation_strategy'", "'local_rank'")
    assert findings_of(forwarded)[0].category == "launcher_config"


def test_mpi_daemons_that_cannot_start_are_outside_the_family() -> None:
    text = (
        "# all_reduce_perf across two nodes does not start\n\n"
        "Each node has 8 H100, -g 1 so one GPU per process.\n\n```\n"
        "bash: orted: command not found\n"
        "ORTE was unable to reliably start one or more daemons.\n```\n"
    )
    assert not alarms_of(text)


def test_reassuring_prose_is_no_symptom() -> None:
    oom = (
        "```\ntorch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 2 "
        "has a total capacity of 23.65 GiB\n```\n"
    )
    denied = (
        "# OOM on 4 GPUs\n\ntorchrun --nproc_per_node 4 train.py. I checked nvidia-smi: it is not "
        "the case that all processes are on GPU 0.\n\n" + oom
    )
    assert not alarms_of(denied)
    fine = (
        "# allreduce shape mismatch\n\n(each process sees GPU:0 because I pin with "
        "`tf.config.experimental.set_visible_devices(gpus[hvd.local_rank()], 'GPU')`, so that "
        "part is OK.)\n\n```\nValueError: shapes (3,) and (4,) do not match\n```\n"
    )
    assert not alarms_of(fine)
    complained = "# OOM on 4 GPUs\n\nAll processes are on GPU 0.\n\n" + oom
    assert findings_of(complained)[0].category == "no_set_device"


def test_a_duplicated_rank_says_what_decides() -> None:
    text = "```\nNCCL WARN Bootstrap Root : rank 0 of 16 ranks has already checked in\n```\n"
    first = findings_of(text)[0]
    assert first.code == "RM905"
    assert "--node_rank" in first.detail and "echo $NODE_RANK" in first.detail


def test_the_same_node_rank_on_every_machine_is_host_identity() -> None:
    text = (
        "# multi-node init fails\n\nThe same run.sh on both machines:\n\n```bash\n"
        "export NODE_RANK=0\n"
        "torchrun --nproc_per_node 8 --nnodes 2 --node_rank $NODE_RANK --master_addr 10.0.0.1 "
        "train.py\n```\n\n```\n"
        "gpu-b:611:619 [0] bootstrap.cc:196 NCCL WARN Bootstrap Root : rank 0 of 16 ranks has "
        "already checked in\n```\n"
    )
    fs = findings_of(text)
    assert fs[0].code == "RM804" and fs[0].category == "host_identity"
    assert "RM905" not in {f.code for f in fs}
    one_node = text.replace("--nnodes 2", "--nnodes 1")
    assert findings_of(one_node)[0].code == "RM905"
