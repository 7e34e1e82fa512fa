"""`rankmap explain` end to end: bad input, empty input, stdin, JSON, version shapes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.explain.patterns import ANCHORS, recognise
from rankmap.explain.prefilter import LineSetMatcher
from rankmap.explain.prefix import strip_prefixes
from rankmap.explain.reader import Line, scan_stream

DUP = "Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000\n"


def test_directory_is_exit_2_one_line(run_cli, tmp_path: Path) -> None:
    r = run_cli(["explain", str(tmp_path)])
    assert r.status == 2 and "directory" in r.stderr and "Traceback" not in r.stderr


def test_missing_file_is_exit_2(run_cli, tmp_path: Path) -> None:
    r = run_cli(["explain", str(tmp_path / "nope.log")])
    assert r.status == 2 and "no such file" in r.stderr


def test_binary_is_exit_2(run_cli, tmp_path: Path) -> None:
    p = tmp_path / "core.bin"
    p.write_bytes(b"\x7fELF\x00\x01\x02" * 100)
    r = run_cli(["explain", str(p)])
    assert r.status == 2 and "binary" in r.stderr


def test_empty_input_is_clean_rm003(run_cli, tmp_path: Path) -> None:
    p = tmp_path / "empty.log"
    p.write_text("")
    r = run_cli(["explain", str(p), "--json"])
    doc = json.loads(r.stdout)
    assert r.status == 0 and doc["findings"][0]["code"] == "RM003"


def test_unrelated_text_is_rm003(run_cli) -> None:
    r = run_cli(["explain", "-"], stdin="hello world\nall good\n")
    assert r.status == 0 and "RM003" in r.stdout


def test_stdin_duplicate_with_context(run_cli) -> None:
    r = run_cli(
        [
            "explain",
            "--json",
            "--launch",
            "torchrun --nproc_per_node 8 train.py",
            "--env",
            "CUDA_VISIBLE_DEVICES=0,1,2,3",
            "--machine",
            "workstation-4gpu",
        ],
        stdin=DUP,
    )
    doc = json.loads(r.stdout)
    first = doc["findings"][0]
    assert r.status == 1
    # CUDA_VISIBLE_DEVICES lists all 4 GPUs of the workstation: 8 processes oversubscribe it
    assert first["code"] == "RM101" and first["ranks"] == [0, 4]
    assert first["devices"] == ["0000:4F:00.0"]
    assert "GPU-65d5d04d" in first["title"]  # the physical GPU behind the bus id is named
    assert "--nproc_per_node 4" in first["fix"]


def test_duplicate_with_narrowing_cvd_on_a_bigger_machine(run_cli) -> None:  # type: ignore[no-untyped-def]
    log = "dgx-h100-01:1:2 [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 18000\n"
    argv = [
        "explain",
        "--json",
        "--launch",
        "torchrun --nproc_per_node 8 train.py",
        "--env",
        "CUDA_VISIBLE_DEVICES=0,1,2,3",
    ]
    # the example without a machine, and on an 8-GPU machine where the variable hides 4
    for extra in ([], ["--machine", "dgx-h100"]):
        r = run_cli([*argv, *extra], stdin=log)
        first = json.loads(r.stdout)["findings"][0]
        assert first["category"] == "visible_devices_mismatch", (extra, first)
        assert first["ranks"] == [0, 4] and first["devices"] == ["0000:18:00.0"]


def test_duplicate_alone_says_what_would_decide(run_cli) -> None:
    r = run_cli(["explain", "--json"], stdin=DUP)
    doc = json.loads(r.stdout)
    assert doc["findings"][0]["code"] == "RM103"
    assert "What would decide" in doc["findings"][0]["detail"]
    assert {f["code"] for f in doc["findings"][1:]} >= {"RM101", "RM301"}


def test_secrets_redacted(run_cli) -> None:
    r = run_cli(["explain", "--json", "--env", "HF_TOKEN=hf_abcdefgh"], stdin=DUP)
    assert "hf_abcdefgh" not in r.stdout


# Init START / COMPLETE in every shape of nccl.md (d), and duplicate WARNs of every version.
INIT_SHAPES = [
    "h:1:2 [3] NCCL INFO comm 0x55 rank 3 nranks 8 cudaDev 3 busId 4f000 - Init COMPLETE",
    "h:1:2 [3] NCCL INFO comm 0x55 rank 3 nranks 8 cudaDev 3 busId 4f000 commId 0x9ad9 - Init COMPLETE",
    "h:1:2 [3] NCCL INFO comm 0x55 rank 3 nranks 8 cudaDev 3 nvmlDev 5 busId 4f000 commId 0x9ad9 - Init START",
    "h:1:2 [3] NCCL INFO ncclCommInitRank comm 0x55 rank 3 nranks 8 cudaDev 3 nvmlDev 5 busId 4f000 commId 0x9ad9 - Init START",
    "h:1:2 [3] NCCL INFO ncclCommSplit comm 0x55 rank 3 nranks 8 cudaDev 3 nvmlDev 5 busId 4f000 parent 0x1 splitCount 1 color 0 key 3- Init START",
    "h:1:2 [3] NCCL INFO [Rank 3] ncclCommInitRankConfig comm 0x55 rank 3 nranks 8 cudaDev 3 nvmlDev 5 busId 4f000 commId 0x9ad9 - Init START",
    "h:1:2 [3] NCCL INFO ncclCommInitRankConfig comm 0x55 rank 3 nranks 8 cudaDev 3 nvmlDev 5 busId 4f000 commId 0x9ad9 - Init COMPLETE",
]


@pytest.mark.parametrize("text", INIT_SHAPES)
def test_init_shapes(text: str) -> None:
    (ev,) = recognise(Line(text, "t"))
    assert ev.kind == "init" and ev.geti("rank") == 3 and ev.geti("nranks") == 8
    assert ev.geti("cuda") == 3 and ev.bus_id == "4f000" and ev.prefix.host == "h"


@pytest.mark.parametrize(
    ("text", "bus", "version"),
    [
        (
            "a:1:2 [0] init.cc:461 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
            "1000",
            "2.5.6",
        ),
        (
            "a:1:2 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 83000",
            "83000",
            "2.7.8",
        ),
        (
            "[2026-05-05 06:16:47] a:1:2 [7] init.cc:904 NCCL WARN Duplicate GPU detected : rank 15 and rank 7 both on CUDA device e4000",
            "e4000",
            "2.28.7/2.28.9",
        ),
        (
            "[1,2]<stdout>:a:1:2 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 196000",
            "196000",
            "2.9.9",
        ),
        (
            "(RayWorkerWrapper pid=5, ip=10.0.0.1) a:1:2 [0] init.cc:974 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 40",
            "40",
            "2.29.7",
        ),
        (
            "worker-0: a:1:2 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 10",
            "10",
            "2.21.5",
        ),
    ],
)
def test_duplicate_every_version(text: str, bus: str, version: str) -> None:
    evs = [e for e in recognise(Line(text, "t")) if e.kind == "duplicate_gpu"]
    assert evs and evs[0].bus_id == bus and evs[0].version == version


def test_prefixes() -> None:
    pre, msg = strip_prefixes("[rank3]:[W1109 ProcessGroupNCCL.cpp:4561] x")
    assert pre.rank == 3
    pre, _ = strip_prefixes("(pid=77) hello")
    assert pre.pid == 77 and pre.ray


def test_huge_line_and_crlf_bounded(tmp_path: Path) -> None:
    p = tmp_path / "big.log"
    with p.open("wb") as f:
        f.write(b"x" * (20 * 1024 * 1024))
        f.write(DUP.encode().replace(b"\n", b"\r\n"))
    with p.open("rb") as f:
        lines = list(
            scan_stream(f, "big", anchors=ANCHORS, size=p.stat().st_size, matcher=LineSetMatcher())
        )
    assert lines and all(len(line.text) <= 8192 for line in lines)
    assert any("rank 0 and rank 4" in line.text for line in lines)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4096))
def test_fuzz_bytes_never_raise(data: bytes) -> None:
    import io

    from rankmap.errors import InputError
    from rankmap.explain.collect import Evidence

    try:
        ev = Evidence()
        ev.add_lines(scan_stream(io.BytesIO(data), "f", anchors=ANCHORS))
    except InputError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=2000))
def test_fuzz_text_never_raise(text: str) -> None:
    from rankmap.explain.collect import Evidence
    from rankmap.explain.context import Context
    from rankmap.explain.engine import diagnose

    ev = Evidence()
    ev.add_lines(
        [Line(text + " Duplicate GPU detected : rank 1 and rank 0 both on CUDA device ", "f")]
    )
    diagnose(ev, Context())


def test_the_rank_map_title_names_the_lines_it_was_rebuilt_from(run_cli, tmp_path: Path) -> None:
    warn = tmp_path / "warn.log"
    warn.write_text("ws-01:1:2 [0] init.cc:904 NCCL WARN " + DUP)
    assert "Rank map (from NCCL's Duplicate GPU WARN)" in run_cli(["explain", str(warn)]).stdout
    init = tmp_path / "init.log"
    init.write_text(
        "n1:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 4f000 - Init COMPLETE\n"
        "n1:2:2 [1] NCCL INFO comm 0x1 rank 1 nranks 2 cudaDev 1 busId 52000 - Init COMPLETE\n"
    )
    assert "Rank map (from NCCL Init lines)" in run_cli(["explain", str(init)]).stdout
