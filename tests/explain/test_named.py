"""Ranks and GPUs named by a text, in the spellings the field prints (explain/named.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.explain.named import devices_in, failing_ranks


@pytest.mark.parametrize(
    "text",
    [
        "0000:4f:00.0",
        "| 1  NVIDIA A100-SXM4-80GB  On | 00000000:4F:00.0 Off |  0 |",
        "NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 4f000 - Init START",
        "Bus-Id: 4F:00.0",
        "pci bus id = 0000:4F:00.0",
        "#   Rank  0 Pid 12 on host device  0 [0000:4f:00.0] NVIDIA A100",
        "PCI 4f:00.0",
    ],
)
def test_bus_id_forms_are_one_gpu(text: str) -> None:
    assert devices_in([text]) == ("0000:4F:00.0",)


def test_uuids_after_bus_ids_each_once() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=MIG-05530d76-86d6-5b39-bdb2-18e10bb343f6 on 00000000:07:00.0\n"
        "again MIG-05530d76-86d6-5b39-bdb2-18e10bb343f6 and 0000:07:00.0"
    )
    assert devices_in([text]) == ("0000:07:00.0", "MIG-05530d76-86d6-5b39-bdb2-18e10bb343f6")


@pytest.mark.parametrize(
    "text",
    [
        "[2025-11-10 17:03:48.123] step 4",  # a clock is no bus id
        "cuda device 12 is busy",  # an index is no bus id
        "Bus-Id        Disp.A | Volatile Uncorr. ECC",
        "version 12:34:56.7",
    ],
)
def test_no_device_where_none_is_named(text: str) -> None:
    assert devices_in([text]) == ()


@pytest.mark.parametrize(
    ("line", "ranks"),
    [
        ("[rank3]: RuntimeError: CUDA error: invalid device ordinal", {3}),
        ("[rank0]: Traceback (most recent call last):", {0}),
        ("MPICH ERROR [Rank 1] [job id 4] Abort (rank 1 in comm 0)", {1}),
        ("Rank 2: NCCL error in: init.cc", {2}),
        ("local_rank=5 failed with exitcode 1", {5}),
        ("[1,6]<stderr>: ValueError: bad", {6}),
        ("[7]: torch.distributed.DistBackendError: boom", {7}),
        ("ERROR rank: 4 timed out", {4}),
        ("error at --local_rank=2", {2}),
        ("comm 0x1 rank 9 nranks 16 failed", {9}),
    ],
)
def test_rank_forms_on_failure_lines(line: str, ranks: set[int]) -> None:
    assert failing_ranks([line]) == ranks


@pytest.mark.parametrize(
    "line",
    [
        "rank 3 started",  # no failure
        "error: nranks 16 localRanks 8",  # counters, not ranks
        "if rank == 0: raise ValueError",
        "hvd.rank() error",
    ],
)
def test_no_rank_where_none_fails(line: str) -> None:
    assert failing_ranks([line]) == set()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_never_raise(text: str) -> None:
    devs = devices_in([text])
    assert len(devs) <= 16
    assert all(r >= 0 for r in failing_ranks(text.splitlines()))
