"""The parallel scan of huge files: the same candidate lines, in file order, as the serial scan,
with a sliding window of segments (memory bound: a few segments, not every matching line)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rankmap.adapters import logs
from rankmap.adapters.matcher import big_input_matcher
from rankmap.adapters.threaded_scan import lines_threaded
from rankmap.explain.anchors import ANCHORS, JOIN_ANCHORS
from rankmap.explain.prefilter import LineSetMatcher
from rankmap.explain.reader import scan_stream


def _log(path: Path) -> Path:
    with path.open("w") as f:
        for n in range(30_000):
            r = n % 64
            if n % 3:
                f.write(f"step {n} loss 0.{n:05d} lr 3e-4 tokens/s 91234\n")
            else:
                f.write(
                    f"node{r // 8}:{100 + r}:{200 + r} [{r % 8}] NCCL INFO comm 0x{n:x} rank {r} "
                    f"nranks 64 cudaDev {r % 8} nvmlDev {r % 8} busId {r % 8 + 1}8000 "
                    f"commId 0x{n // 192:x} - Init COMPLETE\n"
                )
        f.write("node0:100:200 [0] init.cc:904 NCCL WARN Duplicate GPU detected : rank 4 and ")
        f.write("rank 0 both on CUDA device 18000\n")
    return path


def _big_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cores: int) -> tuple[Path, int]:
    """The test log (path, size), which then goes the parallel way on ``cores`` cores, in many
    more 64 KiB segments than the window."""
    monkeypatch.setattr(logs, "PARALLEL_MIN_BYTES", 1)
    monkeypatch.setattr(logs, "SEGMENT_BYTES", 64 * 1024)
    monkeypatch.setattr(logs.os, "cpu_count", lambda: cores)
    path = _log(tmp_path / "big.log")
    return path, path.stat().st_size


def test_parallel_scan_gives_the_serial_lines_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, size = _big_log(tmp_path, monkeypatch, cores=2)
    lines = logs.scan_file_parallel(str(path), size, big_input_matcher())
    assert lines is not None
    parallel = [line.text for line in lines]
    with path.open("rb") as f:
        serial = [
            line.text
            for line in scan_stream(
                f,
                str(path),
                anchors=ANCHORS,
                size=size,
                join=JOIN_ANCHORS,
                matcher=big_input_matcher(),
            )
        ]

    # the serial reader may hand a run of neighbouring lines over as one span: compare lines
    def nccl(texts: list[str]) -> list[str]:
        return [ln for t in texts for ln in t.splitlines() if "NCCL" in ln]

    assert nccl(parallel) == nccl(serial)
    assert sum("Init COMPLETE" in t for t in parallel) == 10_000
    assert "Duplicate GPU detected" in parallel[-1]


class _RecordingPool:
    """Runs each job when its result is taken, recording how many were submitted and not taken."""

    def __init__(self) -> None:
        self.submitted = 0
        self.taken = 0
        self.most_outstanding = 0

    def apply_async(self, fn, args):  # type: ignore[no-untyped-def]
        self.submitted += 1
        self.most_outstanding = max(self.most_outstanding, self.submitted - self.taken)
        pool = self

        class _Result:
            def get(self) -> list[bytes]:
                pool.taken += 1
                out: list[bytes] = fn(*args)
                return out

        return _Result()

    def terminate(self) -> None:
        pass

    def join(self) -> None:
        pass


def test_window_bounds_the_segments_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never more than ``window`` segments submitted and not yet consumed, in file order."""
    path = _log(tmp_path / "big.log")
    size = path.stat().st_size
    step = size // 40
    cuts = list(range(0, size, step))
    with path.open("rb") as f:
        starts = [0] + [logs._line_start(f, c) for c in cuts[1:]] + [size]
    jobs = [(str(path), a, b) for a, b in zip(starts, starts[1:], strict=False) if a < b]
    monkeypatch.setattr(logs, "_WORKER_MATCHER", big_input_matcher())
    pool = _RecordingPool()
    texts = [line.text for line in logs._lines_in_order(pool, jobs, str(path), window=3)]
    assert pool.submitted == len(jobs) > 30 and pool.most_outstanding == 3
    assert sum("Init COMPLETE" in t for t in texts) == 10_000
    assert "Duplicate GPU detected" in texts[-1]


class _PerThread(LineSetMatcher):
    """The pure matcher as a ThreadMatcher (one instance per thread): the threaded path without
    hyperscan installed."""

    def for_thread(self) -> LineSetMatcher:
        return LineSetMatcher()


def test_threaded_scan_gives_the_process_pool_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, size = _big_log(tmp_path, monkeypatch, cores=3)
    assert isinstance(_PerThread(), logs.ThreadMatcher)
    assert not isinstance(LineSetMatcher(), logs.ThreadMatcher)
    threaded = logs.scan_file_parallel(str(path), size, _PerThread())
    forked = logs.scan_file_parallel(str(path), size, LineSetMatcher())
    assert threaded is not None and forked is not None
    assert [line.text for line in threaded] == [line.text for line in forked]


def _jobs(n: int) -> list[tuple[str, int, int]]:
    return [("f", i, i + 1) for i in range(n)]


def test_threads_hold_a_bounded_window_of_segments() -> None:
    """At most workers + 1 segments scanned and not yet consumed, however slow the consumer."""
    lock = threading.Lock()
    state = {"scanned": 0, "consumed": 0, "most": 0}

    def scan(_m: object, _p: str, start: int, _e: int) -> list[bytes]:
        with lock:
            state["scanned"] += 1
            state["most"] = max(state["most"], state["scanned"] - state["consumed"])
        return [b"%d" % start]

    def to_lines(part: list[bytes], _path: str) -> Iterator[int]:
        time.sleep(0.002)
        with lock:
            state["consumed"] += 1
        yield int(part[0])

    out = list(lines_threaded(_PerThread(), _jobs(60), 3, scan, to_lines))
    assert out == list(range(60))
    assert state["most"] <= 4


def test_a_failing_segment_raises_in_the_reader_and_closing_stops_the_threads() -> None:
    def scan(_m: object, _p: str, start: int, _e: int) -> list[bytes]:
        if start == 5:
            raise OSError("disk gone")
        return [b"x"]

    got = []
    with pytest.raises(OSError, match="disk gone"):
        for part in lines_threaded(_PerThread(), _jobs(40), 2, scan, lambda p, _: iter(p)):
            got.append(part)
    assert got == [b"x"] * 5
    before = threading.active_count()
    gen = lines_threaded(_PerThread(), _jobs(40), 2, lambda *_: [b"y"], lambda p, _: iter(p))
    assert next(gen) == b"y"
    gen.close()  # the reader stops early: every scanning thread ends
    assert threading.active_count() == before
