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


def _line_starts(buf: bytes) -> list[int]:
    return [0] + [i + 1 for i, c in enumerate(buf) if c == 0x0A]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(ALPHABET, max_size=60).map(b"".join), min_size=1, max_size=4),
    st.data(),
)
def test_fuzz_a_range_of_whole_lines_same_offsets(chunks: list[bytes], data: st.DataObject) -> None:
    """``hits(buf, start, end)`` (what the reader hands over: the whole lines of a read) finds
    exactly the literals inside the range, whatever was remembered from earlier ranges."""
    m = LineSetMatcher()
    for buf in chunks:
        cuts = sorted({*_line_starts(buf), len(buf)})
        start = data.draw(st.sampled_from(cuts))
        end = data.draw(st.sampled_from([c for c in cuts if c >= start]))
        got, joins = m.hits(buf, start, end)
        want = _reference(buf[start:end], literals())
        assert set(got) == {p + start for p in want}
        assert joins <= set(got)


def test_a_range_through_hyperscan_same_offsets_as_the_pure_matcher() -> None:
    from rankmap.adapters.matcher import _compiled

    fast = _compiled()
    if fast is None:
        pytest.skip("hyperscan not installed")
    rng = random.Random(11)
    buf = b"\n".join(rng.choice(LINES) for _ in range(400)) + b"\n"
    cuts = _line_starts(buf)
    for _ in range(20):
        start, end = sorted(rng.sample(cuts, 2))
        assert fast.hits(buf, start, end)[0] == LineSetMatcher().hits(buf, start, end)[0]


def test_init_lines_hold_no_catalogue_key() -> None:
    """Init lines are anchors; a catalogue key they held would make the document reader try
    its signal's regex on each of the thousands of Init lines of a big job's log."""
    init = [
        b"node-000:1000:1050 [0] NCCL INFO ncclCommInitRank comm 0x550000 rank 0 nranks 512 "
        b"cudaDev 0 nvmlDev 0 busId 4f000 commId 0x9ad9b5e4ab2566da - Init START",
        b"n0:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 4f000 - Init COMPLETE",
        b"NCCL INFO ncclCommInitRankConfig comm 0x8 rank 3 nranks 8 cudaDev 3 busId 3a000 "
        b"commId 0x1 - Init START",
    ]
    for line in init:
        low = line.decode().lower()
        assert [(s.id, k) for s in SIGNALS for k in s.keys if k in low] == []


def test_no_log_key_is_a_bare_number() -> None:
    """A short number alone ("46", "802") is found on a large share of a big log's lines (ranks,
    bus ids, ports): as a prefilter key it makes most of a 512-rank log candidate lines (session
    19: explain on 269 MB took 12 s against grep's 0.2 s). Keys carry the words around a number;
    a long constant (NCCL's -2147483648) is no ordinary number."""
    from rankmap.explain.catalogue import SIGNALS

    for sig in SIGNALS:
        if "log" in sig.where:
            for key in sig.keys:
                bare = not any(ch.isalpha() for ch in key) and any(ch.isdigit() for ch in key)
                assert not bare or len(key) >= 8, (sig.id, key)


def test_routine_nccl_lines_of_a_big_job_hold_no_literal_whatever_their_numbers() -> None:
    lines = []
    for n in range(1000):
        host, local = f"node-{n // 8:03d}", n % 8
        lines += [
            f"{host}:{1000 + n}:{1050 + n} [{local}] NCCL INFO Channel {n % 64:02d}/64 : "
            f"{n}[{local}] -> {n + 1}[{(local + 1) % 8}] [send] via NET/IB/{local}/GDRDMA",
            f"{host}:{1000 + n}:{1050 + n} [{local}] NCCL INFO Trees [0] {n + 1}/-1/-1->{n}->"
            f"{max(n - 1, 0)} [1] {n + 1}/-1/-1->{n}->{max(n - 1, 0)}",
            f"{host}:{1000 + n}:{1050 + n} [{local}] NCCL INFO comm 0x{0x550000 + n:x} rank {n} "
            f"nRanks 1000 nNodes 125 localRanks 8 localRank {local} MNNVL 0",
        ]
    data = ("\n".join(lines) + "\n").encode()
    assert LineSetMatcher().hits(data)[0] == []


def test_a_training_logs_progress_lines_hold_no_literal() -> None:
    """The lines a training loop prints thousands of times ("loss is 0.43", "lr at 0.0003")
    must not be candidates: keys such as "is 0" / "at 0" (digits fold to 0) made every one of
    them a line for the recogniser (session 19, found before release)."""
    lines = [
        f"[2026-12-08 10:{i % 60:02d}:{i % 60:02d}] Epoch {i // 100} | step {i}/5000 | loss is "
        f"0.{i:04d} | lr at 0.000300 | {i}.4 samples/s | grad norm 1.{i % 97}"
        for i in range(2000)
    ]
    data = ("\n".join(lines) + "\n").encode()
    assert LineSetMatcher().hits(data)[0] == []
