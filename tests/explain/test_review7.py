"""Session 7: alarms need positive evidence (false alarms of healthy or wishful pastes).

Every paste below is written for these tests (no reporter's text).
"""

from __future__ import annotations

import pytest
from paste_findings import alarms_of, findings_of

from rankmap.findings import Severity

HEALTHY_SETTINGS = [
    # a per-task GPU binding that works as intended, and a question about it
    "# Throughput per task with one GPU each\n\nWe launch with `srun --ntasks-per-node 4 "
    "--gpus-per-task 1 python train.py` and each task sees one GPU, as intended. How can we "
    "print the throughput of every task at the end of an epoch?\n",
    # a MIG profile question: MIG named three times, nothing failed
    "# Which MIG profile for a 7B model?\n\nOur A100 80GB has MIG mode enabled and we can create "
    "1g.10gb or 3g.40gb instances. Which profile is the better fit to serve a 7B model with "
    "batch size 8?\n",
]


@pytest.mark.parametrize("text", HEALTHY_SETTINGS)
def test_settings_without_any_failure_are_a_possible_cause_not_an_alarm(text: str) -> None:
    first = findings_of(text)[0]
    assert not alarms_of(text)
    # the setting is still named, at info: the reader learns what would matter
    assert first.code != "RM003"
    assert first.severity is Severity.INFO


def test_the_same_setting_next_to_a_reported_failure_still_alarms() -> None:
    text = HEALTHY_SETTINGS[1] + "\nThe second process fails: CUDA error: invalid device ordinal\n"
    assert [f.category for f in alarms_of(text)][:1] == ["mig"]


def test_no_error_without_a_failure_of_the_family() -> None:
    # three MIG settings add up to a decided score; without a failure it is no error
    text = HEALTHY_SETTINGS[1] + "\nSomething else is wrong with the throughput.\n"
    assert all(f.severity is not Severity.ERROR for f in findings_of(text))


def test_an_ignored_visible_devices_list_is_read_within_one_sentence() -> None:
    # "always" belongs to the next sentence: a wish is no report that CVD was ignored
    wish = (
        "# Feature request: respect CUDA_VISIBLE_DEVICES in the benchmark tool\n\n"
        "It would be nice if the benchmark tool could respect CUDA_VISIBLE_DEVICES so that we "
        "can pin it to a GPU of our choice. Today it always enumerates every GPU of the node.\n"
    )
    assert not alarms_of(wish)
    report = "CUDA_VISIBLE_DEVICES=1 is always ignored: the job still runs on GPU 0.\n"
    assert "cvd-ignored" in _signals(report)


def _signals(text: str) -> set[str]:
    from rankmap.explain.docread import read_document

    return set(read_document(text).hits)
