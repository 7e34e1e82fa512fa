"""A report in prose that the choice of GPU went wrong is a failure of this family
(``device-selection-problem``): it gets a best guess at warning severity, never "nothing
recognised" and never an error.

Every sentence below is a shape written for these tests (no reporter's text).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.explain.catalogue import SIGNALS
from rankmap.explain.docread import read_document
from rankmap.findings import Finding, Severity

SID = "device-selection-problem"


def _hits(text: str) -> set[str]:
    return set(read_document(text).hits)


def _explain(text: str) -> list[Finding]:
    return explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()


@pytest.mark.parametrize(
    "report",
    [
        "The GPU ids my trainer prints do not match what nvidia-smi shows.",
        "Which device each worker gets looks random from one run to the next: the process to GPU "
        "mapping is random.",
        "Inside the worker CUDA_VISIBLE_DEVICES is not properly set.",
        "All four workers compete for the first GPU.",
        "Fix the device selection when the scheduler already narrowed the GPUs",
        "The device index reported by the tool is wrong on machines with mixed cards.",
        "rocm-smi and our benchmark disagree on the GPU numbering",
    ],
)
def test_a_report_that_the_gpu_choice_went_wrong_is_recognised(report: str) -> None:
    assert SID in _hits("Title of the report\n\n" + report + "\n")


@pytest.mark.parametrize(
    "sentence",
    [
        "I train on 8 GPUs with nvidia-smi showing all of them busy, which is great.",
        "We set CUDA_VISIBLE_DEVICES=0,1 and run the script.",
        "The loss goes to NaN after 3 epochs.",
        "The data loader fails to open the shard files.",  # a failure, but not of a device choice
    ],
)
def test_a_gpu_word_or_a_failure_alone_is_no_such_report(sentence: str) -> None:
    assert SID not in _hits(sentence + "\n")


def test_it_is_read_in_prose_only_never_in_a_log() -> None:
    sig = next(s for s in SIGNALS if s.id == SID)
    assert sig.where == frozenset({"prose"})
    assert sig.failure  # a failure of the family: the weakest, a prior only


def test_a_prose_only_report_gets_a_warning_guess_with_the_deciding_question() -> None:
    first = _explain(
        "Device numbers do not match nvidia-smi\n\n"
        "I picked GPUs 2 and 3 in the tool's settings, but the device numbers do not match "
        "what nvidia-smi shows as busy.\n"
    )[0]
    assert first.code != "RM003"
    assert first.severity is Severity.WARNING
    assert first.category == "visible_devices_mismatch"
    assert "What would decide" in first.detail


def test_the_context_decides_the_category_of_such_a_report() -> None:
    first = _explain(
        "Each actor gets the wrong GPU\n\n"
        "```python\n@ray.remote(num_gpus=1)\nclass Worker:\n    pass\n```\n"
    )[0]
    assert first.category == "per_process_visible_devices"
    assert first.severity is Severity.WARNING


def test_an_out_of_memory_report_stays_outside_the_family() -> None:
    fs = _explain(
        "OOM on the first GPU\n\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB on device 0; "
        "the wrong GPU? No: the model is simply too big for one card.\n"
    )
    assert not [f for f in fs if f.category != "other" and f.severity is not Severity.INFO]


def test_prose_signals_read_a_bounded_head_of_a_huge_prose_segment() -> None:
    from rankmap.explain.docread import PROSE_SIGNAL_LIMIT

    report = "The GPU ids my trainer prints do not match what nvidia-smi shows.\n"
    filler = "Some words about the weather and the dataset.\n" * 3000
    assert len(filler) > PROSE_SIGNAL_LIMIT
    assert SID in _hits(report + filler)  # within the head: read
    assert SID not in _hits(filler + report)  # beyond it: not read (bounded time)
