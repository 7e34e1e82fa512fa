"""The multi-pattern path of the reader: same candidate lines as the pure-Python path.

The matcher is a port (:class:`rankmap.explain.reader.Matcher`); the stand-in here finds the
anchors with ``bytes.find``, so the chunking and carry-over logic of the zero-copy path is
tested without the optional ``hyperscan`` extra. With hyperscan installed, the real matcher is
compared too.
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from rankmap.adapters import matcher as matcher_mod
from rankmap.adapters.local import explain_files
from rankmap.explain import reader
from rankmap.explain.anchors import ANCHORS, JOIN_ANCHORS

LINES = [
    b"n0:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    b"n0:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 4f000 commId 0x9 - Init START",
    b"n0:1:3 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 nvmlDev 0 busId 4f000 commId 0x9 - Init START",
    b"n0:1:3 [1] init.cc:943 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 4f000",
    b"RuntimeError: CUDA error: invalid device ordinal",
    b"plain chatter " * 3,
]


class FindMatcher:
    """Anchors by ``bytes.find`` (hit = last byte of the anchor, like hyperscan's end offset)."""

    def hits(
        self, buf: bytes, start: int = 0, end: int | None = None
    ) -> tuple[list[int], set[int]]:
        out: list[int] = []
        joins: set[int] = set()
        stop = len(buf) if end is None else end
        for anchor in ANCHORS:
            i = buf.find(anchor, start, stop)
            while i != -1:
                pos = i + len(anchor) - 1
                out.append(pos)
                if anchor in JOIN_ANCHORS:
                    joins.add(pos)
                i = buf.find(anchor, i + 1, stop)
        return sorted(out), joins


def _log(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    return b"\n".join(rng.choice(LINES) for _ in range(n)) + b"\n"


def _events(texts: list[str]) -> list[tuple[object, ...]]:
    from rankmap.explain.patterns import recognise

    out = []
    for t in texts:
        for e in recognise(reader.Line(t, "x")):
            out.append((e.kind, e.ranks, e.bus_id, e.get("rank")))
    return sorted(out, key=repr)


def _pure(data: bytes) -> list[str]:
    lines = reader.scan_stream(io.BytesIO(data), "x", anchors=ANCHORS, join=JOIN_ANCHORS)
    return [ln.text for ln in lines]


def _with(m: reader.Matcher, data: bytes) -> list[str]:
    out: list[str] = []
    carry = b""
    for i in range(0, len(data) + 1, 997):  # odd chunk size: lines cut everywhere
        chunk = data[i : i + 997]
        spans, carry = reader.matched_spans(m, carry, chunk, not chunk)
        out.extend(t for raw in spans if (t := reader.clean(raw)).strip())
        if not chunk:
            break
    return out


@pytest.mark.parametrize("seed", range(5))
def test_zero_copy_chunks_find_the_same_lines(seed: int) -> None:
    data = _log(400, seed)
    assert _events(_with(FindMatcher(), data)) == _events(_pure(data))


def test_hyperscan_matcher_finds_every_anchor_line() -> None:
    pytest.importorskip("hyperscan")
    m = matcher_mod.fast_matcher()
    assert m is not None
    data = _log(300, 9)
    assert _events(_with(m, data)) == _events(_pure(data))


def test_pure_path_can_be_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(matcher_mod.PURE_ENV, "1")
    assert matcher_mod.fast_matcher() is None


def test_big_file_through_the_matcher_keeps_the_diagnosis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reader, "FULL_SCAN_LIMIT", 1024)
    monkeypatch.setattr(reader, "MATCHER_CHUNK_BYTES", 4096)
    monkeypatch.setattr(matcher_mod, "fast_matcher", lambda: FindMatcher())
    import rankmap.adapters.logs as logs

    monkeypatch.setattr(logs, "DOC_LIMIT", 1024)
    monkeypatch.setattr(logs, "big_input_matcher", lambda: FindMatcher())
    log = tmp_path / "big.log"
    log.write_bytes(
        LINES[0] + b"\n" * 1 + (LINES[0] + b"\n") * 400 + b"\n".join(LINES[1:4]) + b"\n"
    )
    report = explain_files([log])
    first = report.ordered_findings()[0]
    assert first.ranks == (0, 1) and first.devices == ("0000:4F:00.0",)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=120, deadline=None)
@given(
    st.lists(st.sampled_from([*LINES, b"", b"\r", b"\xff\xfe", b"x" * 300]), max_size=40),
    st.integers(min_value=1, max_value=700),
)
def test_zero_copy_chunks_never_crash_and_match_the_pure_path(
    parts: list[bytes], step: int
) -> None:
    data = b"\n".join(parts)
    got: list[str] = []
    carry = b""
    for i in range(0, len(data) + step, step):
        chunk = data[i : i + step]
        spans, carry = reader.matched_spans(FindMatcher(), carry, chunk, not chunk)
        got.extend(t for raw in spans if (t := reader.clean(raw)).strip())
        if not chunk:
            break
    assert _events(got) == _events(_pure(data))
