"""What a big log is searched for, and the pure-Python multi-literal matcher that searches it.

One authority for the literals: the reader's anchors (:mod:`rankmap.explain.anchors`, exact
case) and the prefilter keys of every log-side signal of the catalogue
(:data:`rankmap.explain.catalogue.KEYS`, caseless). The hyperscan matcher
(:mod:`rankmap.adapters.matcher`, the ``[fast]`` extra) and :class:`LineSetMatcher` (no extra)
both search exactly :func:`literals`, everywhere in every input.

Why not one ``re`` alternation: CPython's regex engine tries the alternatives one by one at every
position; an alternation of the ~300 literals runs at about 1 MB/s. :class:`LineSetMatcher`
relies on what a big log is instead: a few thousand message templates repeated with other numbers.
It maps every byte once (``bytes.translate``: lowercase, every hex digit to ``0``), splits the chunk
into lines and keeps the *set* of distinct lines. Lines seen before are not searched again; only
new distinct lines are searched for each normalised literal (``bytes.find``, C speed, on a text
that is a small fraction of the chunk). Where a line holding a literal occurs, the literal's
normalised form is found in the normalised chunk (same offsets) and checked against the original
bytes, so the positions are exact, like hyperscan's. Memory is bounded by the chunk and by
:data:`REMEMBER_BYTES` of remembered lines.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from rankmap.explain.anchors import ANCHORS, JOIN_ANCHORS
from rankmap.explain.catalogue import SIGNALS

BLOCK_BYTES = 1024 * 1024  # line-aligned blocks: translate, split and search stay in the cache
REMEMBER_BYTES = 32 * 1024 * 1024  # distinct lines remembered across chunks (then forgotten)


@dataclass(frozen=True)
class Literal:
    """One literal a candidate line holds: its bytes, whether case matters, whether it marks a
    message a terminal may have wrapped (its hit brings the neighbouring lines)."""

    text: bytes
    caseless: bool
    join: bool

    @property
    def lowered(self) -> bytes:
        return self.text.lower()


@lru_cache(maxsize=1)
def literals() -> tuple[Literal, ...]:
    """Anchors (exact case) then the catalogue's log-side keys (caseless), deduplicated."""
    out = [Literal(a, False, a in JOIN_ANCHORS) for a in ANCHORS]
    keys = sorted({k for sig in SIGNALS if "log" in sig.where for k in sig.keys})
    out += [Literal(k.encode(), True, False) for k in keys]
    return tuple(out)


def _normaliser() -> bytes:
    table = bytearray(bytes(range(256)).lower())
    for digit in b"0123456789abcdefABCDEF":
        table[digit] = ord("0")
    return bytes(table)


# lowercase ASCII, every hex digit -> "0" (numbers, addresses and ids vary from line to line of
# one message); one byte per byte, so offsets in the normalised block are offsets in the block
NORMALISE = _normaliser()


class LineSetMatcher:
    """:class:`rankmap.explain.reader.Matcher` over :func:`literals` without compiled code."""

    def __init__(self, lits: tuple[Literal, ...] | None = None) -> None:
        by_norm: dict[bytes, list[Literal]] = defaultdict(list)
        for lit in lits if lits is not None else literals():
            by_norm[lit.text.translate(NORMALISE)].append(lit)
        self._norms = list(by_norm)
        self._lits = [tuple(by_norm[n]) for n in self._norms]
        self._seen: set[bytes] = set()  # normalised lines that hold no literal
        self._hit: dict[bytes, frozenset[int]] = {}  # normalised line -> indices into _norms
        self._remembered = 0
        self.patterns = len(self._norms)
        self.chunk_bytes = BLOCK_BYTES  # the reader's read size with this matcher

    def hits(self, buf: bytes) -> tuple[list[int], set[int]]:
        """(sorted end offsets of every literal in ``buf``, offsets of wrap-prone ones)."""
        out: list[int] = []
        joins: set[int] = set()
        start, size = 0, len(buf)
        while start < size:  # line-aligned blocks that stay in the CPU cache
            end = (
                size
                if start + BLOCK_BYTES >= size
                else buf.rfind(b"\n", start, start + BLOCK_BYTES) + 1
            )
            if end <= start:  # one line longer than a block
                end = buf.find(b"\n", start + BLOCK_BYTES) + 1 or size
            self._block(buf[start:end] if start or end < size else buf, start, out, joins)
            start = end
        out.sort()
        return out, joins

    def _block(self, block: bytes, offset: int, out: list[int], joins: set[int]) -> None:
        norm = block.translate(NORMALISE)
        lines = set(norm.splitlines())  # \n and \r: no literal holds either
        seen, hit = self._seen, self._hit
        new = {line for line in lines if line not in seen and line not in hit}
        if new:
            self._learn(new)
        wanted: set[int] = set()
        for line in lines:
            if line in hit:
                wanted |= hit[line]
        if not wanted:
            return
        low = block.lower()  # position for position: caseless literals are found in it
        for k in wanted:
            for lit in self._lits[k]:
                hay, needle = (low, lit.lowered) if lit.caseless else (block, lit.text)
                end = len(needle) - 1 + offset
                i = hay.find(needle)
                while i != -1:
                    out.append(i + end)
                    if lit.join:
                        joins.add(i + end)
                    i = hay.find(needle, i + 1)

    def _learn(self, new: set[bytes]) -> None:
        """Sort new distinct lines into those holding a normalised literal and the rest."""
        size = sum(map(len, new)) + len(new)
        if self._remembered + size > REMEMBER_BYTES:
            self._seen.clear()
            self._hit.clear()
            self._remembered = 0
        self._remembered += size
        text = b"\n".join(new)
        found: dict[bytes, set[int]] = defaultdict(set)
        find, rfind = text.find, text.rfind
        for k, norm in enumerate(self._norms):
            i = find(norm)
            while i != -1:
                start = rfind(b"\n", 0, i) + 1
                end = find(b"\n", i)
                end = len(text) if end == -1 else end
                found[text[start:end]].add(k)
                i = find(norm, end + 1) if end < len(text) else -1
        for line, ks in found.items():
            self._hit[line] = frozenset(ks)
        self._seen.update(new.difference(found))
