"""Session 15: shapes written here (nvidia-smi read aloud without a verb)."""

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
