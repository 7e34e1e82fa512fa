"""Rank map from Init lines (per-rank files), torchrun summaries, device guesses, bounded memory."""

from __future__ import annotations

import io
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import explain_files
from rankmap.explain.engine import build_context
from rankmap.inventory import load_machine

INIT = (
    "{host}:{pid}:{pid} [{cuda}] NCCL INFO ncclCommInitRank comm 0x{pid:x} rank {rank} nranks 8 "
    "cudaDev {cuda} nvmlDev {nvml} busId {bus} commId 0xfeed - Init START\n"
)
DGX_BUSES = ["18000", "2a000", "3a000", "5d000", "9a000", "ab000", "ba000", "db000"]


def _per_rank_files(tmp_path: Path, cuda_of: dict[int, int]) -> list[Path]:
    paths = []
    for rank, cuda in cuda_of.items():
        host = "gpu-a" if rank < 4 else "gpu-b"
        p = tmp_path / f"nccl.{host}.{1000 + rank}.log"
        p.write_text(
            INIT.format(
                host=host, pid=1000 + rank, cuda=cuda, nvml=cuda, rank=rank, bus=DGX_BUSES[cuda]
            )
        )
        paths.append(p)
    return paths


def test_rank_map_from_one_file_per_rank(tmp_path: Path) -> None:
    files = _per_rank_files(tmp_path, {r: r % 4 for r in range(8)})
    report = explain_files(files, machines=load_machine("dgx-h100"))
    placements = {p.rank: p for p in report.placements}
    assert sorted(placements) == list(range(8))
    assert placements[5].node == "gpu-b" and placements[5].cuda_index == 1
    assert placements[5].pci_bus_id == "0000:2A:00.0"
    assert placements[5].uuid and placements[5].uuid.startswith("GPU-")
    assert report.ordered_findings()[0].code == "RM042"  # no collision: info only
    assert report.verdict == "ok"


def test_collision_found_per_host_and_comm(tmp_path: Path) -> None:
    files = _per_rank_files(tmp_path, {0: 0, 1: 1, 2: 0, 3: 3, 4: 0, 5: 1, 6: 2, 7: 3})
    report = explain_files(files)
    first = report.ordered_findings()[0]
    assert first.ranks == (0, 2) and first.devices == ("0000:18:00.0",)
    assert first.hosts == ("gpu-a",)


def test_mig_pattern_every_rank_cuda0(tmp_path: Path) -> None:
    files = _per_rank_files(tmp_path, dict.fromkeys(range(4), 0))
    report = explain_files(files, machines=load_machine("a100-mig"))
    assert report.ordered_findings()[0].category == "mig"


def test_torchrun_root_cause_and_guess_warning(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    log.write_text(
        "[rank6]:[W1109 10:00:00.1 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 6]  using "
        "GPU 6 to perform barrier as devices used by this process are currently unknown.\n"
        "[rank9]: torch.AcceleratorError: CUDA error: invalid device ordinal\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2025-01-01_10:00:00\n"
        "  host      : node-2\n  rank      : 9 (local_rank: 1)\n  exitcode  : 1 (pid: 77)\n"
    )
    report = explain_files([log])
    codes = [f.code for f in report.ordered_findings()]
    assert "RM402" in codes
    failures = report.sections["explain"]["failures"]
    assert failures == [
        {"rank": 9, "local_rank": 1, "host": "node-2", "exitcode": 1, "root_cause": True}
    ]
    assert 9 in report.ordered_findings()[0].ranks


def test_launch_parser_and_script_selection(tmp_path: Path) -> None:
    # the launch is read by the shared parser and check's engine (no --machine: a stand-in)
    ctx, note = build_context(
        "CUDA_VISIBLE_DEVICES=0,1 torchrun --nnodes 2 --nproc-per-node=4 t.py", {}, (), None
    )
    f = ctx.launch
    assert f is not None and note is None
    assert (f.launcher, f.nproc_per_node, f.nnodes) == ("torchrun", 4, 2)
    assert ("CUDA_VISIBLE_DEVICES", "0,1") in f.env
    nested = build_context(
        "srun --ntasks-per-node=8 torchrun --nproc_per_node=8 t.py", {}, (), None
    )[0].launch
    assert nested is not None
    assert nested.nested_in == "srun" and nested.outer_tasks_per_node == 8
    s = tmp_path / "t.py"
    s.write_text("import os, torch\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n")
    files = LocalFiles()
    assert build_context(None, {}, (), s, files=files)[0].script_selection == "local_rank"
    s.write_text("def broken(:\n")
    assert build_context(None, {}, (), s, files=files)[0].selection() is None


def test_no_newline_file_memory_bounded(tmp_path: Path) -> None:
    p = tmp_path / "one-line.log"
    with p.open("wb") as f:
        for _ in range(6):
            f.write(b"Error " * (1024 * 1024 // 6 * 4))
    tracemalloc.start()
    explain_files([p])
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 64 * 1024 * 1024


def test_check_launch_integration(tmp_path: Path) -> None:
    log = tmp_path / "d.log"
    log.write_text("Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000\n")
    report = explain_files(
        [log],
        launch="torchrun --nproc-per-node 8 train.py",
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
        machines=load_machine("workstation-4gpu"),
    )
    # all 4 GPUs of the workstation are listed: 8 processes oversubscribe it
    assert report.ordered_findings()[0].category == "oversubscribed"
    narrowing = explain_files(
        [log],
        launch="torchrun --nproc-per-node 8 train.py",
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
        machines=load_machine("dgx-a100"),
    )
    assert narrowing.ordered_findings()[0].category == "visible_devices_mismatch"


INIT_SHAPES = {  # reference/nccl.md (d): every Init line shape, NCCL 2.4 -> 2.30
    "2.4-2.6": "comm 0x7f01 rank {r} nranks 2 cudaDev {r} nvmlDev {r} - Init COMPLETE",
    "2.7-2.15": "comm 0x7f01 rank {r} nranks 2 cudaDev {r} busId {b} - Init COMPLETE",
    "2.16": "comm 0x7f01 rank {r} nranks 2 cudaDev {r} busId {b} commId 0xabc - Init COMPLETE",
    "2.18.3": (
        "comm 0x7f01 rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {b} commId 0xabc - Init START"
    ),
    "2.23": (
        "ncclCommInitRankConfig comm 0x7f01 rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {b}"
        " commId 0xabc - Init START"
    ),
    "2.24-split": (
        "ncclCommSplit comm 0x7f01 rank {r} nranks 2 cudaDev {r} nvmlDev {r} busId {b}"
        " parent 0x55 splitCount 1 color 3 key {r}- Init START"
    ),
    "2.30": (
        "[Rank {r}] ncclCommInitRank comm 0x7f01 rank {r} nranks 2 cudaDev {r} nvmlDev {r}"
        " busId {b} commId 0xabc - Init START"
    ),
    "2.30-split": (
        "[Rank {r}] ncclCommSplit comm 0x7f01 rank {r} nranks 2 cudaDev {r} nvmlDev {r}"
        " busId {b} parent 0x55 childCount 1 color 3 key {r}- Init START"
    ),
}


@pytest.mark.parametrize("shape", sorted(INIT_SHAPES))
def test_every_init_shape_places_its_ranks(shape: str) -> None:
    from rankmap.explain.collect import Evidence
    from rankmap.explain.reader import iter_text_lines

    text = "\n".join(
        f"h1:{10 + r}:{20 + r} [{r}] NCCL INFO " + INIT_SHAPES[shape].format(r=r, b=b)
        for r, b in ((0, "18000"), (1, "4f000"))
    )
    ev = Evidence()
    ev.add_lines(iter_text_lines(text))
    got = [(p.rank, p.node, p.cuda_index) for p in ev.rankmap.placements()]
    assert got == [(0, "h1", 0), (1, "h1", 1)]
    buses = [p.pci_bus_id for p in ev.rankmap.placements()]
    assert buses == ([None, None] if shape == "2.4-2.6" else ["0000:18:00.0", "0000:4F:00.0"])


def test_split_without_comm_id_is_its_own_communicator() -> None:
    from rankmap.explain.collect import Evidence
    from rankmap.explain.reader import iter_text_lines

    world = INIT_SHAPES["2.23"].replace("nranks 2", "nranks 4")
    lines = [
        f"h1:{10 + r}:1 [{r}] NCCL INFO " + world.format(r=r, b=f"{r + 1}8000") for r in range(4)
    ]
    split = INIT_SHAPES["2.24-split"].replace("nranks 2", "nranks 4")
    lines += [f"h1:{10 + r}:1 [{r}] NCCL INFO " + split.format(r=r, b="18000") for r in range(2)]
    ev = Evidence()
    ev.add_lines(iter_text_lines("\n".join(lines)))
    assert len(ev.rankmap.communicators()) == 2
    assert len(ev.rankmap.main_comm()) == 4


def _rankmap(lines: list[str]) -> Any:
    from rankmap.explain.collect import Evidence
    from rankmap.explain.reader import iter_text_lines

    ev = Evidence()
    ev.add_lines(iter_text_lines("\n".join(lines)))
    return ev.rankmap


def _world_and_split(split_pids: tuple[int, int]) -> list[str]:
    """World ranks 0-3 on h1, ranks 2 and 3 both on bus 38000; a split of those two processes
    (numbered 0 and 1 in the split) with the pids given."""
    world = INIT_SHAPES["2.23"].replace("nranks 2", "nranks 4")
    buses = ["18000", "28000", "38000", "38000"]
    lines = [f"h1:{10 + r}:1 [{r}] NCCL INFO " + world.format(r=r, b=buses[r]) for r in range(4)]
    split = INIT_SHAPES["2.24-split"]
    lines += [
        f"h1:{pid}:1 [0] NCCL INFO " + split.format(r=r, b="38000")
        for r, pid in enumerate(split_pids)
    ]
    return lines


def test_a_split_collision_is_named_by_the_world_ranks_of_its_processes() -> None:
    rm = _rankmap(_world_and_split((12, 13)))
    assert [c.ranks for c in rm.collisions()] == [(2, 3)]  # not the split's 0 and 1 as well


def test_a_split_collision_of_unknown_processes_adds_no_local_numbers() -> None:
    rm = _rankmap(_world_and_split((98, 99)))  # pids the world group does not show
    assert [c.ranks for c in rm.collisions()] == [(2, 3)]


def test_a_split_alone_keeps_its_own_numbers() -> None:
    split = INIT_SHAPES["2.24-split"]
    rm = _rankmap([f"h1:{10 + r}:1 [0] NCCL INFO " + split.format(r=r, b="38000") for r in (0, 1)])
    assert [c.ranks for c in rm.collisions()] == [(0, 1)]


def test_first_finding_names_the_colliding_world_ranks() -> None:
    report = explain_files(["-"], stdin=io.StringIO("\n".join(_world_and_split((12, 13))) + "\n"))
    assert report.ordered_findings()[0].ranks == (2, 3)


def test_a_split_warn_is_named_by_the_world_ranks_of_the_init_lines() -> None:
    # the split's WARN numbers the pair 0 and 1; the world Init lines show ranks 2 and 3
    warn = "h1:12:1 [2] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 38000"
    text = "\n".join([*_world_and_split((12, 13)), warn]) + "\n"
    first = explain_files(["-"], stdin=io.StringIO(text)).ordered_findings()[0]
    assert first.ranks == (2, 3)
    alone = explain_files(["-"], stdin=io.StringIO(warn + "\n")).ordered_findings()[0]
    assert alone.ranks == (0, 1)  # without Init lines the WARN's own numbers are all there is
