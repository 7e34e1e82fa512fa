"""Three false alarms left open by session 7's review (its closing note), fixed in session 8: a
hostname of localhost on one machine, a visible-devices list that "has always worked", and a
MIG question whose title says "Error handling". Each has its positive twin."""

from __future__ import annotations

from paste_findings import alarms_of, findings_of

TIMEOUT = (
    "[E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=5023, OpType=ALLREDUCE, Timeout(ms)=1800000) ran for 1800085 milliseconds "
    "before timing out.\n"
)


def test_localhost_on_one_machine_is_no_host_identity_problem() -> None:
    text = (
        "# Evaluation is slow at the end of each epoch\n\n"
        "Single machine, hostname is localhost, torchrun --nproc_per_node 4 train.py.\n"
        "Rank 0 evaluates for 40 minutes and the other ranks hit:\n" + TIMEOUT
    )
    assert not alarms_of(text)


def test_localhost_on_two_machines_is_still_host_identity() -> None:
    text = (
        "# NCCL hangs across our two nodes\n\n"
        "Both machines report hostname localhost. torchrun --nnodes 2 --nproc_per_node 8 "
        "train.py hangs at init and then:\n" + TIMEOUT
    )
    assert findings_of(text)[0].category == "host_identity"


def test_a_list_that_has_always_worked_is_no_ignored_list() -> None:
    text = (
        "# Training crashes with a KeyError after upgrading datasets\n\n"
        "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 train.py has always worked for us.\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 88, in <module>\n'
        "KeyError: 'input_ids'\n"
    )
    assert not alarms_of(text)


def test_a_list_the_job_always_ignores_is_still_reported() -> None:
    text = "CUDA_VISIBLE_DEVICES=1 python train.py, but the job always runs on GPU 0.\n"
    assert findings_of(text)[0].category == "visible_devices_mismatch"


def test_a_mig_question_titled_error_handling_is_a_possible_cause_only() -> None:
    text = (
        "# Error handling question: can two ranks share MIG slices?\n\n"
        "We enabled MIG on our A100 (2x 3g.20gb). Before we try, can DDP use the two slices as "
        "two ranks? Nothing has failed yet.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "mig"
    assert not alarms_of(text)


def test_a_mig_failure_still_warns() -> None:
    text = (
        "# NCCL error with two ranks on MIG slices\n\n"
        "We enabled MIG on our A100 (2x 3g.20gb) and run DDP with one rank per slice.\n"
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled cuda error\n"
    )
    first = findings_of(text)[0]
    assert first.category == "mig"
    assert first.severity.value in ("warning", "error")
