"""The GPU count a reporter states in prose ("2 GPUs", "8x A100 GPUs", "a 4-GPU machine") is read
as the machine's count; a symptom ("only one GPU is used") is not."""

from __future__ import annotations

import pytest

from rankmap.explain.docread import read_document

STATED = {
    "Our box has 2 GPUs and we start four workers.\n": 2,
    "We train on 8x A100 GPUs.\n": 8,
    "This is a 4-GPU machine running Ubuntu.\n": 4,
    "Two cards are installed.\n": 2,
    "The workstation has 2x RTX 3090.\n": 2,
    "We rent 4 x A100 80GB.\n": 4,
    "It runs on eight H100s.\n": 8,
}


@pytest.mark.parametrize("text", sorted(STATED))
def test_a_stated_count_is_read(text: str) -> None:
    assert read_document(text).stated_gpus == STATED[text]


@pytest.mark.parametrize(
    "text",
    [
        "Only one GPU is used by the job.\n",
        "The GPU memory is full after a few steps.\n",
        "Training got 2x faster on an A100.\n",
    ],
)
def test_a_symptom_is_no_count(text: str) -> None:
    assert read_document(text).stated_gpus is None
