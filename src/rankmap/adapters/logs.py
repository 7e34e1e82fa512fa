"""Log input for ``explain``: files and stdin through the input adapter, big files in parallel.

The scanning itself (anchors, spans, cleaning) is pure and lives in
:mod:`rankmap.explain.reader`; this module only opens (regular files only, via
:func:`rankmap.adapters.files.open_regular`), decodes UTF-16 with a BOM on files and stdin alike,
and fans a huge file out to every CPU (threads with hyperscan, forked processes otherwise).
"""

from __future__ import annotations

import io
import os
from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, BinaryIO, Protocol, runtime_checkable

from rankmap.adapters.files import binary_stream, open_regular, put_back, utf8_stream
from rankmap.adapters.matcher import big_input_matcher
from rankmap.errors import InputError
from rankmap.explain.anchors import ANCHORS, JOIN_ANCHORS
from rankmap.explain.docread import DOC_LIMIT
from rankmap.explain.reader import (
    _SNIFF,
    MAX_LINE,
    Line,
    Matcher,
    check_text,
    chunk_size,
    clean,
    matched_spans,
    scan_stream,
)

STDIN_NAMES = ("-",)
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
PARALLEL_MIN_BYTES = 64 * 1024 * 1024


class LocalLogs:
    """:class:`rankmap.explain.engine.LogSource` on this machine: files, and ``-`` = ``stdin``."""

    def __init__(self, stdin: Any = None) -> None:
        self._stdin = stdin

    def lines(self, name: str, texts: list[str] | None = None) -> Iterable[Line]:
        """Candidate lines of one input; ``texts`` receives its decoded text when it is small
        enough to be read as a document (:data:`DOC_LIMIT`), or the candidate lines of a big
        one (every signal of the catalogue, bounded)."""
        if name in STDIN_NAMES:
            stream = self._stdin
            if stream is None:
                raise InputError("stdin: no stream to read the log from")
            return _stdin_lines(utf8_stream(binary_stream(stream)), texts)
        return _file_lines(name, texts)

    def source_name(self, name: str) -> str:
        return "<stdin>" if name in STDIN_NAMES else name


def _stdin_lines(binary: Any, texts: list[str] | None) -> Iterator[Line]:
    head = binary.read(DOC_LIMIT + 1) or b""
    big = len(head) > DOC_LIMIT
    source: Any = put_back(binary, head) if big else io.BytesIO(head)
    if texts is not None and not big:
        texts.append(head.decode("utf-8", "replace"))
    lines = scan_stream(
        source,
        "<stdin>",
        anchors=ANCHORS,
        join=JOIN_ANCHORS,
        matcher=big_input_matcher() if big else None,
    )
    return _captured(lines, texts) if texts is not None and big else lines


def _file_lines(name: str, texts: list[str] | None = None) -> Iterator[Line]:
    handle, size = open_input(name)
    with handle:
        try:
            utf16 = handle.read(2) in UTF16_BOMS
            handle.seek(0)
            # inputs not read whole as a document: every literal of the prefilter, everywhere
            matcher = big_input_matcher() if size > DOC_LIMIT else None
            fast = None
            if not utf16 and matcher is not None:
                fast = scan_file_parallel(name, size, matcher)
            lines = fast or scan_stream(
                utf8_stream(handle) if utf16 else handle,
                name,
                anchors=ANCHORS,
                size=None if utf16 else size,  # decoded UTF-16: line by line, line numbers kept
                join=JOIN_ANCHORS,
                matcher=matcher,
            )
            if texts is not None and size > DOC_LIMIT:
                lines = _captured(lines, texts)
            yield from lines
            if texts is not None and size <= DOC_LIMIT:
                handle.seek(0)
                data = handle.read(DOC_LIMIT)
                stream = utf8_stream(io.BytesIO(data)) if utf16 else io.BytesIO(data)
                texts.append(stream.read().decode("utf-8", "replace"))
        except OSError as exc:
            raise InputError(f"{name}: cannot read: {exc.strerror or exc}") from None


def open_input(path: str) -> tuple[BinaryIO, int]:
    """A regular file opened for :func:`scan_stream`; ``InputError`` (one line) otherwise."""
    return open_regular(path, path)


@runtime_checkable
class ThreadMatcher(Matcher, Protocol):
    """A matcher that scans without holding the GIL; ``for_thread`` gives one for another
    thread (its own scratch space)."""

    def for_thread(self) -> Matcher: ...


_WORKER_MATCHER: Matcher | None = None  # set before the pool forks: inherited by the workers


def _scan_segment(args: tuple[str, int, int]) -> list[bytes]:
    """Worker process: candidate lines of ``path[start:end]`` (both at line starts)."""
    matcher = _WORKER_MATCHER
    assert matcher is not None
    return scan_range(matcher, *args)


def scan_range(matcher: Matcher, path: str, start: int, end: int) -> list[bytes]:
    """Candidate lines of ``path[start:end]`` (both at line starts), read ``chunk_size`` at a
    time."""
    out: list[bytes] = []
    step = chunk_size(matcher)
    with open(path, "rb", buffering=0) as f:
        f.seek(start)
        pos, carry = start, b""
        while True:
            chunk = f.read(min(step, end - pos)) if pos < end else b""
            pos += len(chunk)
            eof = not chunk
            if eof and not carry:
                break
            spans, carry = matched_spans(matcher, carry, chunk, eof)
            out.extend(spans)
            if eof:
                break
    return out


def _line_start(f: BinaryIO, pos: int) -> int:
    f.seek(pos)
    tail = f.read(MAX_LINE)
    i = tail.find(b"\n")
    return pos + i + 1 if i != -1 else pos


SEGMENT_BYTES = 16 * 1024 * 1024  # one worker job; at most WINDOW jobs' lines are held at once


def scan_file_parallel(path: str, size: int, matcher: Matcher) -> Iterator[Line] | None:
    """Scan a huge file on every CPU (each worker its own segments, every literal of the
    ``matcher``); None when not worth it or not possible (then it is scanned in this process).

    A matcher that scans without the GIL (hyperscan: ``for_thread``) runs in threads, one
    scratch space each: no fork, no copy of the results between processes. The others
    (the pure-Python matcher) run in forked processes. Segments are handed out in a sliding
    window and their lines yielded in file order, so the memory held is a few segments'
    candidate lines however big the file and however many of its lines match (a log of
    nothing but Init lines is all candidates).
    """
    global _WORKER_MATCHER
    cpus = os.cpu_count() or 1
    if size < PARALLEL_MIN_BYTES or cpus < 2:
        return None
    n = min(cpus, 8)
    parts = max(n, -(-size // SEGMENT_BYTES))
    with open(path, "rb", buffering=0) as f:
        check_text(f.read(_SNIFF), path)
        cuts = [0] + [_line_start(f, i * size // parts) for i in range(1, parts)] + [size]
    jobs = [(path, cuts[i], cuts[i + 1]) for i in range(parts) if cuts[i] < cuts[i + 1]]
    if isinstance(matcher, ThreadMatcher):
        from rankmap.adapters.threaded_scan import lines_threaded

        return lines_threaded(matcher, jobs, n, scan_range, _to_lines)
    try:
        import multiprocessing as mp

        ctx = mp.get_context("fork")
    except (ImportError, ValueError):
        return None
    _WORKER_MATCHER = matcher  # the forked workers inherit it (compiled once, in the parent)
    try:
        pool = ctx.Pool(n)
    except OSError:
        return None
    finally:
        _WORKER_MATCHER = None
    return _lines_in_order(pool, jobs, path, window=n + 1)


def _to_lines(part: list[bytes], path: str) -> Iterator[Line]:
    for raw in part:
        if (text := clean(raw)).strip():
            yield Line(text, path, None)


def _lines_in_order(
    pool: Any, jobs: list[tuple[str, int, int]], path: str, window: int
) -> Iterator[Line]:
    """Candidate lines of ``jobs`` in order, at most ``window`` jobs submitted and not consumed."""
    pending: deque[Any] = deque()
    todo = iter(jobs)
    try:
        for first in islice(todo, window):
            pending.append(pool.apply_async(_scan_segment, (first,)))
        while pending:
            part: list[bytes] = pending.popleft().get()
            following = next(todo, None)
            if following is not None:
                pending.append(pool.apply_async(_scan_segment, (following,)))
            yield from _to_lines(part, path)
            del part
    finally:
        pool.terminate()
        pool.join()


def _captured(lines: Iterator[Line], texts: list[str]) -> Iterator[Line]:
    """Pass ``lines`` through, keeping their text (at most DOC_LIMIT) for the catalogue."""
    kept: list[str] = []
    room = DOC_LIMIT
    for line in lines:
        if room > 0:
            kept.append(line.text)
            room -= len(line.text) + 1
        yield line
    texts.append("\n".join(kept))
