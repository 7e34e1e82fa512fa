"""Streaming, memory-bounded reading of logs: only the lines that can matter come out.

A 1 GB ``NCCL_DEBUG=INFO`` log is mostly channel/topology chatter. Reading it line by line in
Python is far slower than ``grep``, so the reader scans big binary chunks with ``bytes.find`` for
*anchors* (short literals every recognised message contains, see :mod:`rankmap.explain.patterns`)
and decodes only the lines around a hit. Memory stays bounded whatever the file size or line
length: chunks are fixed-size, the carry-over of an unterminated line is capped, and a very long
line is cut into windows around each hit.

Inputs small enough to be read whole as a document are scanned for the anchors; bigger ones by a
multi-literal matcher (:mod:`rankmap.adapters.matcher`: hyperscan, or the pure-Python
:class:`rankmap.explain.prefilter.LineSetMatcher`) for every anchor and every prefilter key of the
signal catalogue, everywhere.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from rankmap.errors import InputError

CHUNK_BYTES = 4 * 1024 * 1024
MAX_LINE = 16 * 1024  # longer lines are cut into windows around each anchor hit
WINDOW_BEFORE = 1024
WINDOW_AFTER = 3072
MAX_WINDOWS_PER_LINE = 32
FULL_SCAN_LIMIT = 8 * 1024 * 1024  # bigger files: big chunks through the matcher, no line numbers
_SNIFF = 8192
_NBSP = b"\xc2\xa0"  # U+00A0 in UTF-8
JOIN_MAX = 512  # a neighbouring line this short may be the rest of a terminal-wrapped message

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[@-Z\\-_]")


class Matcher(Protocol):
    """A multi-pattern matcher: hit positions in ``buf[start:end]`` (``start`` and ``end`` line
    starts or the ends of ``buf``), and those of wrap-prone messages."""

    def hits(
        self, buf: bytes, start: int = 0, end: int | None = None
    ) -> tuple[list[int], set[int]]: ...


@dataclass(frozen=True)
class Line:
    """One candidate line of input, decoded and cleaned (ANSI colours and CR removed)."""

    text: str
    source: str
    lineno: int | None = None  # 1-based; None where counting lines would cost a full pass

    def where(self) -> str:
        """``file:12`` or ``file``."""
        return f"{self.source}:{self.lineno}" if self.lineno else self.source


def clean(raw: bytes) -> str:
    """Decode (invalid UTF-8 replaced), drop ANSI colour codes, CR and other control characters.

    A span of several physical lines (a hit with its neighbours) is cleaned line by line.
    """
    if b"\n" in raw:
        return "\n".join(_clean_one(part) for part in raw.split(b"\n"))
    return _clean_one(raw)


def _clean_one(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        # A CR inside a line (progress bars) keeps only what was last drawn; a trailing CR is CRLF.
        text = text.rstrip("\r")
        if "\r" in text:
            text = text.rsplit("\r", 1)[-1] if text.rsplit("\r", 1)[-1].strip() else text
    if "\xa0" in text:  # non-breaking spaces from rich-text pastes
        text = text.replace("\xa0", " ")
    return text.replace("\x00", "")


def check_text(head: bytes, source: str) -> None:
    """Raise :class:`InputError` when ``head`` (the first bytes) looks binary."""
    if not head:
        return
    if b"\x00" in head:
        raise InputError(f"{source}: binary file (NUL bytes), not a log")
    sample = head[:_SNIFF]
    bad = sum(1 for b in sample if b < 9 or 13 < b < 32 and b != 27)
    if bad * 10 > len(sample):
        raise InputError(f"{source}: binary file, not a log")


def _hits(
    buf: bytes, anchors: Sequence[bytes], join: frozenset[bytes] = frozenset()
) -> tuple[list[int], set[int]]:
    """Positions of anchors in ``buf`` (at most one per line, or per window of a long line),
    and the subset found by ``join`` anchors (messages a terminal may have wrapped)."""
    out: list[int] = []
    joins: set[int] = set()
    find = buf.find
    for anchor in anchors:
        joinable = anchor in join
        i = find(anchor)
        while i != -1:
            out.append(i)
            if joinable:
                joins.add(i)
            nl = find(b"\n", i, i + WINDOW_AFTER)
            i = find(anchor, (nl if nl != -1 else i + WINDOW_AFTER) + 1)
    out.sort()
    return out, joins


def _neighbours(buf: bytes, start: int, end: int, limit: int) -> tuple[int, int]:
    """Widen a line span by the previous and next line where those are short."""
    if start > 0:
        prev = buf.rfind(b"\n", 0, start - 1) + 1
        if start - prev <= JOIN_MAX:
            start = prev
    if end < limit:
        nxt = buf.find(b"\n", end + 1, limit)
        nxt = limit if nxt == -1 else nxt
        if nxt - end <= JOIN_MAX:
            end = nxt
    return start, end


def _has_join(join_list: list[int], start: int, end: int) -> bool:
    i = bisect_left(join_list, start)
    return i < len(join_list) and join_list[i] < end


def _spans(
    buf: bytes, hits: list[int], limit: int, joins: set[int] | frozenset[int] = frozenset()
) -> list[tuple[int, int]]:
    """Line spans (start, end) around ``hits`` in ``buf[:limit]``, long lines cut into windows.

    A span never grows past :data:`MAX_LINE` + a window, and one long line yields at most
    :data:`MAX_WINDOWS_PER_LINE` windows per chunk, so adversarial input stays cheap. A hit in
    ``joins`` also takes its short neighbouring lines (the rest of a wrapped message).
    """
    spans: list[tuple[int, int]] = []
    join_list = sorted(joins)
    last_end = -1
    line_start = -1
    windows = 0
    rfind, find = buf.rfind, buf.find
    for pos in hits:
        if pos < last_end:
            continue
        start = rfind(b"\n", 0, pos) + 1
        end = find(b"\n", pos, limit)
        if end == -1:
            end = limit
        if end - start > MAX_LINE:
            windows = windows + 1 if start == line_start else 1
            line_start = start
            if windows > MAX_WINDOWS_PER_LINE:
                last_end = end
                continue
            start = max(start, pos - WINDOW_BEFORE, last_end)
            end = min(end, pos + WINDOW_AFTER)
        elif joins and _has_join(join_list, start, end):
            start, end = _neighbours(buf, start, end, limit)
        if spans and start <= spans[-1][1] and end - spans[-1][0] <= MAX_LINE:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((max(start, spans[-1][1]) if spans else start, end))
        last_end = spans[-1][1]
    return spans


def scan_stream(
    stream: BinaryIO,
    source: str,
    *,
    anchors: Sequence[bytes],
    size: int | None = None,
    count_lines: bool | None = None,
    join: frozenset[bytes] = frozenset(),
    matcher: Matcher | None = None,
) -> Iterator[Line]:
    """Yield the lines of ``stream`` that contain an anchor (or, with a multi-literal
    ``matcher``, any literal of :func:`rankmap.explain.prefilter.literals`), in input order.

    Inputs larger than :data:`FULL_SCAN_LIMIT` (``size`` known) are scanned by the ``matcher``
    in big chunks without line numbers. Raises :class:`InputError` for binary input.
    """
    small = size is None or size <= FULL_SCAN_LIMIT
    if matcher is not None and not small:
        yield from _scan_with_matcher(stream, source, matcher)
        return
    if count_lines is None:
        count_lines = small
    lineno = 1  # line number at buf[0]
    carry = b""
    first = True
    while True:
        chunk = stream.read(CHUNK_BYTES)
        if first:
            check_text(chunk, source)
            first = False
        eof = not chunk
        buf = carry + chunk if carry else chunk
        if not buf:
            break
        if eof:
            limit = len(buf)
        else:
            limit = buf.rfind(b"\n") + 1
            if limit == 0:  # no newline at all: a long line; process all but a window tail
                limit = max(0, len(buf) - WINDOW_BEFORE)
        region = buf[:limit] if limit < len(buf) else buf
        consumed = limit
        if _NBSP in region:  # rich-text pastes: plain spaces
            region = region.replace(_NBSP, b" ")
            limit = len(region)
        hits, joins = matcher.hits(region) if matcher is not None else _hits(region, anchors, join)
        prev = 0
        for start, end in _spans(region, hits, limit, joins):
            if count_lines:
                lineno += region.count(b"\n", prev, start)
                prev = start
            text = clean(region[start:end])
            if text.strip():
                yield Line(text, source, lineno if count_lines else None)
        if count_lines:
            lineno += region.count(b"\n", prev, limit)
        carry = buf[consumed:]
        if eof:
            break
        if len(carry) > MAX_LINE * 4:  # bounded carry-over of an endless line
            carry = carry[-MAX_LINE:]


def matched_spans(
    matcher: Matcher, carry: bytes, chunk: bytes, eof: bool
) -> tuple[list[bytes], bytes]:
    """Candidate line spans of ``carry + chunk`` without copying the chunk; the new carry.

    The matcher scans ``chunk`` in place (one pass over memory, the cost that matters on big
    files); the partial line carried over from the previous chunk is joined to the first line
    of this one and scanned on its own.
    """
    out: list[bytes] = []
    first_nl = chunk.find(b"\n")
    if first_nl == -1:  # no line end in this chunk: all of it continues the carried line
        buf = carry + chunk
        if not eof:
            return out, buf[-MAX_LINE * 4 :]
        first_nl = len(chunk) - 1
    head = carry + chunk[: first_nl + 1]
    if head.strip():
        hits, joins = matcher.hits(head)
        out.extend(head[a:b] for a, b in _spans(head, hits, len(head), joins))
    body_end = len(chunk) if eof else chunk.rfind(b"\n") + 1
    lo = first_nl + 1
    if body_end > lo:
        hits, joins = matcher.hits(chunk, lo, body_end)  # the whole lines only, in place
        out.extend(chunk[max(a, lo) : b] for a, b in _spans(chunk, hits, body_end, joins))
    return out, b"" if eof else chunk[body_end:][-MAX_LINE * 4 :]


def _scan_with_matcher(stream: BinaryIO, source: str, matcher: Matcher) -> Iterator[Line]:
    """:func:`scan_stream` for big inputs with a multi-pattern matcher (every pattern)."""
    carry = b""
    first = True
    step = chunk_size(matcher)
    while True:
        chunk = stream.read(step)
        if first:
            check_text(chunk, source)
            first = False
        eof = not chunk
        if eof and not carry:
            break
        spans, carry = matched_spans(matcher, carry, chunk or b"", eof)
        for raw in spans:
            text = clean(raw)
            if text.strip():
                yield Line(text, source, None)
        if eof:
            break


MATCHER_CHUNK_BYTES = 1024 * 1024  # reads of 16 MiB cost twice the system time of 1 MiB ones


def chunk_size(matcher: Matcher) -> int:
    """How much to read at a time for ``matcher`` (its ``chunk_bytes``, else 1 MiB)."""
    size = getattr(matcher, "chunk_bytes", MATCHER_CHUNK_BYTES)
    return size if isinstance(size, int) and size > 0 else MATCHER_CHUNK_BYTES


def iter_text_lines(text: str, source: str = "<text>") -> Iterable[Line]:
    """Every non-empty line of an in-memory string (tests, small pastes), cleaned."""
    for i, raw in enumerate(text.splitlines(), 1):
        cleaned = clean(raw.encode("utf-8", "surrogatepass"))
        if cleaned.strip():
            yield Line(cleaned[:MAX_LINE], source, i)
