"""The pure-Python multi-literal matcher finds exactly what a literal-by-literal search finds.

:class:`rankmap.explain.prefilter.LineSetMatcher` remembers distinct (normalised) lines across
chunks; whatever it remembers, every occurrence of every literal must come out at its exact end
offset: anchors in their case, catalogue keys in any case, digits as they are.
"""

from __future__ import annotations

import io
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.explain import prefilter, reader
from rankmap.explain.anchors import ANCHORS
from rankmap.explain.catalogue import SIGNALS
from rankmap.explain.prefilter import LineSetMatcher, Literal, literals


def _reference(buf: bytes, lits: tuple[Literal, ...]) -> set[int]:
    low = buf.lower()
    out: set[int] = set()
    for lit in lits:
        hay, needle = (low, lit.text.lower()) if lit.caseless else (buf, lit.text)
        i = hay.find(needle)
        while i != -1:
            out.add(i + len(needle) - 1)
            i = hay.find(needle, i + 1)
    return out


LINES = [
    b"node-001:1234:1290 [3] NCCL INFO Channel 07/0 : 11[3] -> 12[4] via P2P/CUMEM/read",
    b"node-001:1234:1290 [3] NCCL INFO comm 0x55ab rank 11 nranks 16 cudaDev 3 busId 4f000 - Init START",
    b"node-002:99:100 [0] init.cc:943 NCCL WARN Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 4f000",
    b"export CUDA_Visible_Devices=0,1 && torchrun --nproc_per_node 2 train.py",
    b"RuntimeError: CUDA error: invalid device ordinal",
    b"ray.exceptions.RayTaskError: HOSTNAME same on both pods",
    b"step 1200 loss 2.3145 lr 0.0003",
    b"cuda:1 cuda:0 CUDA:0 gpu0 GPU 7 00000000:4F:00.0",
    b"init start init START nccl warn",
]


def test_every_catalogue_key_and_anchor_is_searched() -> None:
    texts = {lit.text for lit in literals()}
    assert set(ANCHORS) <= texts
    for sig in SIGNALS:
        if "log" in sig.where:
            assert {k.encode() for k in sig.keys} <= texts, sig.id


def test_same_offsets_as_a_literal_by_literal_search() -> None:
    rng = random.Random(3)
    m = LineSetMatcher()
    for _ in range(6):  # several chunks: remembered lines must not hide repeated hits
        buf = b"\n".join(rng.choice(LINES) for _ in range(300)) + b"\n"
        got, joins = m.hits(buf)
        assert set(got) == _reference(buf, literals())
        assert joins <= set(got)


def test_blocks_cut_at_line_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefilter, "BLOCK_BYTES", 97)
    buf = b"\n".join(LINES * 5) + b"x" * 400 + b"NCCL WARN"
    got, _ = LineSetMatcher().hits(buf)
    assert set(got) == _reference(buf, literals())


def test_memory_is_forgotten_not_wrong(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefilter, "REMEMBER_BYTES", 300)
    m = LineSetMatcher()
    rng = random.Random(1)
    for _ in range(4):
        buf = b"\n".join(rng.choice(LINES) for _ in range(50))
        assert set(m.hits(buf)[0]) == _reference(buf, literals())
        assert m._remembered <= len(buf) + prefilter.LINE_OVERHEAD * (buf.count(b"\n") + 1)


def test_big_input_through_the_pure_matcher_keeps_every_line() -> None:
    rng = random.Random(5)
    data = b"\n".join(rng.choice(LINES) for _ in range(2000)) + b"\n"
    lines = list(
        reader.scan_stream(
            io.BytesIO(data), "big", anchors=ANCHORS, size=len(data), matcher=LineSetMatcher()
        )
    )
    assert len(data) < reader.FULL_SCAN_LIMIT  # line-numbered path
    assert any("Duplicate GPU" in ln.text for ln in lines)
    assert any("CUDA_Visible_Devices" in ln.text for ln in lines)
    assert all(ln.lineno for ln in lines)


ALPHABET = st.sampled_from(
    [
        b"NCCL",
        b" WARN",
        b"warn",
        b"Init ",
        b"START",
        b"cuda",
        b":0",
        b"_visible_device",
        b"s",
        b"\n",
    ]
    + [b"Mig-", b"gpu", b"0", b"7", b"\xff", b"rror", b"hostname", b" ", b"\r"]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(ALPHABET, max_size=60).map(b"".join), min_size=1, max_size=4))
def test_fuzz_chunks_same_offsets(chunks: list[bytes]) -> None:
    m = LineSetMatcher()
    for buf in chunks:
        got, joins = m.hits(buf)
        assert set(got) == _reference(buf, literals())
        assert joins <= set(got)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=3000))
def test_fuzz_bytes(buf: bytes) -> None:
    got, _ = LineSetMatcher().hits(buf)
    assert set(got) == _reference(buf, literals())


def test_distinct_hex_lines_switch_to_folding_hex_and_stay_exact() -> None:
    rng = random.Random(2)
    m = LineSetMatcher()
    for _ in range(5):
        lines = [
            f"obj at 0x{rng.getrandbits(48):012x} id {rng.getrandbits(32):08x}" for _ in range(300)
        ]
        lines += [rng.choice(LINES).decode() for _ in range(30)]
        buf = "\n".join(lines).encode()
        assert set(m.hits(buf)[0]) == _reference(buf, literals())
    assert m._table is prefilter.HEX_NORMALISE


@pytest.mark.parametrize(
    ("sid", "line"),
    [
        (
            "comm-error-any",
            "torch.distributed.DistBackendError: NCCL error in: ../ProcessGroupNCCL.cpp:1970",
        ),
        ("comm-error-any", "RuntimeError: NCCL Error 3: internal error"),
        ("comm-error-any", "ncclUnhandledCudaError: Call to CUDA function failed."),
        (
            "comm-error-any",
            "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
        ),
        ("comm-error-any", "NCCL communicator was aborted on rank 3."),
        ("comm-error-any", "RCCL failure at init"),
        ("comm-error-any", "ncclCommInitRank failed: unhandled system error"),
        (
            "comm-error-any",
            "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
        ),
        (
            "gpu-held-by-another",
            "RuntimeError: CUDA error: all CUDA-capable devices are busy or unavailable",
        ),
        ("gpu-held-by-another", "another process is already using the GPU"),
        ("gpu-held-by-another", "GPU 3 is already in use"),
        (
            "gpu-held-by-another",
            "Free memory on device cuda:0 (2.1/79.1 GiB) on startup is less than desired",
        ),
    ],
)
def test_narrow_keys_still_let_every_alternative_through(sid: str, line: str) -> None:
    """Keys name each alternative of the regex, not a word every log line has ("nccl")."""
    sig = next(s for s in SIGNALS if s.id == sid)
    assert sig.pattern.search(line), line
    assert any(k in line.lower() for k in sig.keys), line


def test_routine_nccl_info_lines_are_no_candidates() -> None:
    lines = [
        b"node-007:1062:1113 [6] NCCL INFO Channel 11/0 : 62[6] -> 63[7] via P2P/CUMEM/read",
        b"node-057:1456:1507 [0] NCCL INFO Connected all rings, use ring PXN 0 GDR 1",
        b"node-036:1291:1342 [3] NCCL INFO comm 0x550123 rank 291 nRanks 512 nNodes 64 localRanks 8",
        b"node-008:1066:1117 [2] NCCL INFO Trees [0] 66/-1/-1->67->65 [1] 66/-1/-1->67->65",
    ]
    for line in lines:
        held = [
            x.text
            for x in literals()
            if (x.text.lower() in line.lower() if x.caseless else x.text in line)
        ]
        assert held == [], (line, held)
