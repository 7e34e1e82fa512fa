"""Prose that states the failure: every node (pod, slice) given the same rank, and several
processes on device *zero* spelled out (shapes written here, after batch b15's dev part)."""

from __future__ import annotations

import pytest
from paste_findings import alarms_of, findings_of


@pytest.mark.parametrize(
    "text",
    [
        "# Every pod gets node rank 0 in a two-node job\n\nThe operator starts both pods with "
        "NODE_RANK=0 and the second one never joins: the job hangs at init.\n",
        "# Training on two TPU slices fails with duplicate process IDs\n\nThe second slice "
        "starts counting from 0 again.\n",
        "# ranks are duplicated across nodes\n\nBoth machines print rank 0 and rank 1 and the "
        "job hangs at init.\n",
    ],
)
def test_nodes_that_claim_the_same_rank_are_a_host_identity_cause(text: str) -> None:
    first = findings_of(text)[0]
    assert first.category == "host_identity"
    assert first.severity.value in ("warning", "error")


def test_a_local_rank_zero_on_every_node_is_normal() -> None:
    text = (
        "# Question about multi-node logging\n\nEach node has local rank 0 and 1, which is "
        "what I expect. Where do the logs of node 2 go?\n"
    )
    assert not [f for f in alarms_of(text) if f.category == "host_identity"]


def test_processes_assigned_device_zero_spelled_out_is_no_set_device() -> None:
    text = (
        "# -g flag ignored with MPI\n\nWith `-g 0,1` and two MPI ranks, both processes are "
        "assigned device zero and run out of memory.\n"
    )
    assert findings_of(text)[0].category == "no_set_device"


def test_processes_that_compete_for_the_first_gpu_is_no_set_device() -> None:
    text = (
        "# Workers slow down together\n\nWith four workers started by our trainer, all the "
        "processes compete for the first GPU and the others stay idle.\n"
    )
    assert findings_of(text)[0].category == "no_set_device"


def test_a_node_local_rank_zero_told_by_design_and_a_fix_in_tests_are_no_alarm() -> None:
    for text in (
        "# Question\n\nAll nodes get rank 0 for their local master process, by design.\n",
        "# Cleanup\n\nThe PR removes duplicate node ranks in the hostfile parser tests.\n",
    ):
        assert not alarms_of(text), text
