"""Ranks and GPUs named by a text, in the spellings the field prints (explain/named.py)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from text_strategies import joined_fragments

from rankmap.explain.named import (
    _FAILURE,
    devices_in,
    failing_ranks,
    intra_host_ranks,
    pair_named,
    ranks_on,
    reports_failure,
    stated_ranks,
)


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


def test_torch_device_properties_name_their_gpu() -> None:
    props = (
        "_CudaDeviceProperties(name='NVIDIA A100-SXM4-80GB', major=8, minor=0, "
        "total_memory=81050MB, multi_processor_count=108, uuid=0d2c3e4f-0000-1111-2222-333344445555, "
        "pci_bus_id=222, pci_device_id=0, pci_domain_id=0, L2_cache_size=40MB)"
    )
    assert devices_in([props]) == ("0000:DE:00.0",)  # decimal 222 = bus 0xde, not packed "222"


def test_old_mig_form_is_one_device_not_its_gpu() -> None:
    text = "CUDA_VISIBLE_DEVICES=MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2"
    assert devices_in([text]) == ("MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/2",)


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
        "pci_bus_id: 4f",  # packed hex of function 15: no PCI address
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
        ("rank3 failed to connect", {3}),
        ("Rank 1/8: NCCL error: unhandled system error", {1}),
        ("ERROR: rank 0 and rank 4 hang in barrier", {0, 4}),
        ("ranks 0 and 4 failed", {0, 4}),
        ("timed out waiting for ranks [2, 3]", {2, 3}),
        ("error: ranks: 2, 3 did not answer", {2, 3}),
        ("ranks 0-7 timed out", set(range(8))),
        ("ranks 4 to 6 crashed", {4, 5, 6}),
        ("ranks 0, 3-5 crashed", {0, 3, 4, 5}),
        ("ranks 7-3 failed", {3, 7}),  # a descending pair is no range
        ("LOCAL_RANK=2 RuntimeError: CUDA error", {2}),
        ("Initializing distributed: GLOBAL_RANK: 1, MEMBER: 2/2 failed", {1}),
        ("global rank 12 exited with exit code 1", {12}),
        ("(RayWorkerWrapper pid=4411, rank=3) RuntimeError: invalid device ordinal", {3}),
        ("(VllmWorker rank=1 pid=12) ERROR worker failed", {1}),
        ("[default3]:Traceback (most recent call last):", {3}),
        ("-- Process 1 terminated with the following error:", {1}),
        ("process 2 terminated with exit code 1", {2}),
        ("Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 1a000", {0, 4}),
        ("error on rank 0, 8 GPUs in total", {0}),  # a singular rank takes one number
        ("rank 0 and 1 both fail on cuda:0", {0, 1}),
        (
            "(Worker_TP1 pid=3534) ERROR 10-11 22:28:17 [multiproc_executor.py:694] RuntimeError",
            {1},
        ),
        (
            "(Worker_PP0_TP3 pid=88) ERROR RuntimeError: CUDA error: invalid device ordinal",
            {3},
        ),  # ... or two joined by "and"
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
        "error: node rank 1 of 2",  # a node's rank, not a process's
        "node_rank=1 group rank 1 machine rank 1 failed",
        "error: nRanks 8 localRanks 8 localRank 0",
        "error at rank 123456789",  # no rank of a job
        "[trainer3]: Traceback (most recent call last):",  # only torchrun's default role
        "rank 0 exchanges its unique id",  # "hang" inside a word is no failure
        "(Worker_PP1_TP0 pid=88) ERROR RuntimeError",  # a later stage: the rank needs the TP size
        "which makes all ranks except local_rank 0 fail",  # the others fail, not rank 0
    ],
)
def test_no_rank_where_none_fails(line: str) -> None:
    assert failing_ranks([line]) == set()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_never_raise(text: str) -> None:
    devs = devices_in([text])
    assert len(devs) <= 16
    lines = text.splitlines()
    for ranks in (failing_ranks(lines), stated_ranks(lines), intra_host_ranks(lines)):
        assert len(ranks) <= 64 and all(r >= 0 for r in ranks)
    pair_named(lines)


def test_a_huge_range_is_bounded() -> None:
    assert len(failing_ranks(["ranks 0-99999 failed"])) == 64


def test_prose_states_ranks_without_a_failure_word() -> None:
    assert stated_ranks(["Extra GPU memory on rank 0 when using DDP"]) == {0}
    assert stated_ranks(["rank 1 printed the line, then nothing"]) == {1}


@pytest.mark.parametrize(
    "line",
    [
        "every rank besides rank 0 allocates a context",  # the ranks meant are the others
        "all ranks except rank 3 finished",
        ">    Rank  0 Pid  1201 on node-a device  0 [0x1a] Tesla V100",  # a rank map, every rank
        "comm 0x1 rank 2 nranks 4 cudaDev 2 busId 3000 - Init COMPLETE",
    ],
)
def test_prose_ranks_leave_out_negations_and_rank_maps(line: str) -> None:
    assert stated_ranks([line]) == set()


@pytest.mark.parametrize(
    ("line", "pair"),
    [
        ("Thus both processes will use the same single GPU", True),
        ("local_rank is 0 on both processes", True),
        ("Both ranks reached the barrier and failed", True),
        ("the two workers were both placed on GPU 0", True),
        ("both GPUs are idle", False),
        ("four processes on two GPUs", False),
    ],
)
def test_both_processes_is_a_pair(line: str, pair: bool) -> None:
    assert pair_named([line]) is pair


def test_intra_host_transport_lines_of_every_version() -> None:
    lines = [
        "mtk:2521:2528 [0] INFO 0 -> 1 via P2P/IPC",  # NCCL 2.0-2.3, no "NCCL" word
        "gpu6:1410:1605 [3] NCCL INFO Ring 00 : 3[3] -> 1[1] via P2P/IPC",
        "h1:919:1150 [0] NCCL INFO Channel 01 : 4[7000] -> 7[4a000] via P2P/IPC/read",  # <= 2.17
        "h1:919:1150 [0] NCCL INFO Channel 01/0 : 8[0] -> 15[7] via P2P/IPC/read",  # 2.18+
        "h2:11:12 [2] NCCL INFO Channel 00/0 : 10[2] -> 9[1] via SHM/direct/direct",
    ]
    assert intra_host_ranks(lines) == {0, 1, 3, 4, 7, 8, 15, 10, 9}


@pytest.mark.parametrize(
    "line",
    [
        "gpu7:4105:4372 [0] NCCL INFO Ring 00 : 1 -> 4 [send] via NET/IB/1/GDRDMA",  # between hosts
        "h:1:2 [3] NCCL INFO Channel 00 : 3[4a000] -> 6[44000] [send] via NET/IB/0/GDRDMA",
        "h:1:2 [0] NCCL INFO Ring 00 : 7 -> 0 -> 1",  # a ring listing, no connection
        "h:1:2 [0] NCCL INFO Trees [0] 1/-1/-1->0->-1",
    ],
)
def test_no_intra_host_rank_from_network_or_ring_lines(line: str) -> None:
    assert intra_host_ranks([line]) == set()


def test_the_failure_itself_wins_over_the_others_reaction() -> None:
    lines = [
        "[rank0]: torch.distributed.DistBackendError: NCCL error: remote process exited or "
        "there was a network error, NCCL version 2.21.5",
        "[rank1]: [E ProcessGroupNCCL.cpp:616] Watchdog caught collective operation timeout",
        "[rank3]: RuntimeError: CUDA error: invalid device ordinal",
    ]
    assert failing_ranks(lines) == {3}
    assert failing_ranks(lines[:2]) == {0, 1}  # only reactions: they are all there is


_FAILURE_TEXT = joined_fragments(
    [
        "Error",
        "ERROR",
        "timed out",
        "time out",
        "timeout",
        "TimedOut",
        "hang",
        "shang",
        "Stuck",
        "NCCL WARN",
        "exit code",
        "Init START",
        "rank 3",
        "ſignal",
        "Killed",
        "\u212ailled",
        "ok",
        " ",
        "-",
        "é",
    ],
    filler=12,
    count=8,
)


@settings(max_examples=400, deadline=None)
@given(_FAILURE_TEXT)
def test_the_failure_gate_never_changes_the_answer(line: str) -> None:
    assert reports_failure(line) == (_FAILURE.search(line) is not None)


def test_the_failure_gate_on_the_lines_that_matter() -> None:
    init = "h:1:2 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 8 busId 4f000 - Init START"
    assert not reports_failure(init)
    assert reports_failure("h:1:2 [0] NCCL WARN Duplicate GPU detected : rank 4 and rank 0")
    assert reports_failure("collective operation TIMED OUT after 600000 ms")
    assert reports_failure("\u017fignal 9")  # caseless regex folds the long s: so does the gate


@pytest.mark.parametrize(
    ("line", "ranks"),
    [
        ("PROC_ID=0 No devices found.", {0}),
        ("SLURM_PROCID=3 CUDA_VISIBLE_DEVICES=", {3}),
        ("OMPI_COMM_WORLD_RANK=2 failed to open the device", {2}),
        ("PMI_RANK: 5 invalid device ordinal", {5}),
    ],
)
def test_a_launcher_rank_variable_names_its_rank(line: str, ranks: set[int]) -> None:
    assert ranks_on(line) == ranks


def test_a_local_size_variable_is_no_rank() -> None:
    assert ranks_on("OMPI_COMM_WORLD_LOCAL_SIZE=8 SLURM_NPROCS=4") == set()
