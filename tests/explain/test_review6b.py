"""Review 6b: false alarms and regressions of session 6's explain changes.

Every paste below is written for these tests (no reporter's text).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.findings import Finding, Severity


def _alarms(text: str) -> list[Finding]:
    report = explain_files([Path("-")], stdin=io.StringIO(text))
    return [
        f
        for f in report.ordered_findings()
        if f.category != "other" and f.severity is not Severity.INFO
    ]


@pytest.mark.parametrize(
    "text",
    [
        "# Training loss spikes after epoch 3 with CUDA_VISIBLE_DEVICES=0,1\n\n"
        "Both GPUs are busy and the run is fine otherwise; the loss jumps at epoch 3.\n",
        "# Throughput drops after upgrading, HIP_VISIBLE_DEVICES=0,1\n\n"
        "The problem is only speed: 20% fewer samples per second than last month.\n",
    ],
)
def test_a_title_naming_context_is_no_failure(text: str) -> None:
    # the title ranks the causes of a failure the paste shows; it shows none here
    assert not _alarms(text)


def test_a_title_still_weighs_double_next_to_a_failure() -> None:
    from rankmap.explain.context import Context
    from rankmap.explain.docread import read_document
    from rankmap.explain.scoring import score_all

    tail = "\nRuntimeError: CUDA error: invalid device ordinal\n"
    title = read_document("# We set CUDA_VISIBLE_DEVICES=2,3 for the job\n" + tail)
    body = read_document("Intro.\n\nWe set CUDA_VISIBLE_DEVICES=2,3 for the job.\n" + tail)
    t = score_all([], Context(), title).points["visible_devices_mismatch"]
    b = score_all([], Context(), body).points["visible_devices_mismatch"]
    assert t > b
