"""Support below an alarm's still names a possible cause, at ``info`` (session 8).

An input that shows support for a category, but not enough for a warning (no failure of this
family, a setting only), used to end in "Nothing in the input was recognised". The best-supported
cause is named instead, at ``info``, with the fact that would decide it; "nothing recognised"
stays for input that supports no category at all and for a failure outside the family.
"""

from __future__ import annotations

from paste_findings import alarms_of, findings_of

from rankmap.explain.scoring import WEAK_NOTE
from rankmap.findings import Severity

DEEPSPEED_PROSE = (
    "We launch with `deepspeed --num_gpus 2 train.py` on one node.\n"
    "The second worker never prints anything.\n"
)


def test_a_setting_alone_is_named_as_a_possible_cause_at_info() -> None:
    first = findings_of(DEEPSPEED_PROSE)[0]
    assert first.code == "RM945"
    assert first.category == "launcher_config"
    assert first.severity is Severity.INFO
    assert first.detail.startswith(WEAK_NOTE)
    assert "What would decide" in first.detail
    assert first.evidence and "deepspeed --num_gpus 2" in first.evidence[0]
    assert not alarms_of(DEEPSPEED_PROSE)


def test_input_supporting_no_category_is_still_nothing_recognised() -> None:
    fs = findings_of("Training finished after 3 epochs, loss 0.41.\n")
    assert [f.code for f in fs] == ["RM003"]


def test_a_failure_outside_the_family_gets_no_weak_guess() -> None:
    # a Python import error next to a launch line: the outside failure wins
    text = (
        "$ torchrun --nproc_per_node 2 train.py\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 3, in <module>\n'
        "ModuleNotFoundError: No module named 'apex'\n"
    )
    fs = findings_of(text)
    assert fs[0].code == "RM003" or fs[0].severity is Severity.INFO
    assert not any(f.detail.startswith(WEAK_NOTE) for f in fs)
    assert not alarms_of(text)


def test_a_guess_with_enough_support_is_no_weak_guess() -> None:
    # a decided error (the ordinal beyond the visible list) keeps its own finding and severity
    text = (
        "CUDA_VISIBLE_DEVICES=0 torchrun --nproc_per_node 2 train.py\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    first = findings_of(text)[0]
    assert first.severity is not Severity.INFO
    assert not first.detail.startswith(WEAK_NOTE)
