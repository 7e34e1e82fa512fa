"""What a big log is searched for, and the pure-Python multi-literal matcher that searches it.

One authority for the literals: the reader's anchors (:mod:`rankmap.explain.anchors`, exact
case) and the prefilter keys of every log-side signal of the catalogue
(:data:`rankmap.explain.catalogue.KEYS`, caseless). The hyperscan matcher
(:mod:`rankmap.adapters.matcher`, the ``[fast]`` extra) and :class:`LineSetMatcher` (no extra)
both search exactly :func:`literals`, everywhere in every input.

Why not one ``re`` alternation: CPython's regex engine tries the alternatives one by one at every
position; an alternation of the ~300 literals runs at about 1 MB/s. :class:`LineSetMatcher`
relies on what a big log is instead: a few thousand message templates repeated with other numbers.
It maps every byte once (``bytes.translate``: lowercase, every digit to ``0``; hex digits too
once lines stay distinct even so), splits the chunk
into lines and keeps the *set* of distinct lines. Lines seen before are not searched again; only
new distinct lines are searched for each normalised literal (``bytes.find``, C speed, on a text
that is a small fraction of the chunk). In a block holding such a line, the literals
it holds are found in the block itself (lowercased for the caseless keys, as is for the anchors),
so the positions are exact, like hyperscan's. Memory is bounded by the chunk and by
:data:`REMEMBER_BYTES` of remembered lines.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache

from rankmap.explain.anchors import ANCHORS, JOIN_ANCHORS
from rankmap.explain.catalogue import SIGNALS

BLOCK_BYTES = 256 * 1024  # line-aligned blocks: the block, its translation and its lines fit in L2
READ_BYTES = 1024 * 1024  # what the reader reads at a time for this matcher (reused, cache-warm)
REMEMBER_BYTES = 32 * 1024 * 1024  # memory of remembered distinct lines (then forgotten)
LINE_OVERHEAD = 120  # bytes a remembered line costs beyond its text (object, set or dict slot)


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


def _normaliser(folded: bytes) -> bytes:
    table = bytearray(bytes(range(256)).lower())
    for char in folded:
        table[char] = ord("0")
    return bytes(table)


# Lowercase ASCII and every digit -> "0": the numbers of one message vary from line to line. One
# byte per byte, so offsets in the normalised block are offsets in the block. Where lines stay
# distinct even so (hex addresses and ids), HEX_NORMALISE also folds a-f; it is not the default
# because it weakens literals such as "gb" or "acs " (then found on most lines of a log).
NORMALISE = _normaliser(b"0123456789")
HEX_NORMALISE = _normaliser(b"0123456789abcdefABCDEF")
POOR_BLOCKS = 3  # blocks in a row whose distinct new lines are over 1/8 of them: fold hex too


class LineSetMatcher:
    """:class:`rankmap.explain.reader.Matcher` over :func:`literals` without compiled code."""

    def __init__(self, lits: tuple[Literal, ...] | None = None) -> None:
        self._all = lits if lits is not None else literals()
        self.patterns = len(self._all)
        self.chunk_bytes = READ_BYTES  # the reader's read size with this matcher
        self._poor = 0
        self._use(NORMALISE)

    def _use(self, table: bytes) -> None:
        """Normalise with ``table`` from now on (what was remembered is forgotten)."""
        by_norm: dict[bytes, list[Literal]] = defaultdict(list)
        for lit in self._all:
            by_norm[lit.text.translate(table)].append(lit)
        self._table = table
        self._norms = list(by_norm)
        self._lits = [tuple(by_norm[n]) for n in self._norms]
        self._seen: set[bytes] = set()  # normalised lines that hold no literal
        self._hit: dict[bytes, frozenset[int]] = {}  # normalised line -> indices into _norms
        self._remembered = 0

    def hits(
        self, buf: bytes, start: int = 0, end: int | None = None
    ) -> tuple[list[int], set[int]]:
        """(sorted end offsets of every literal in ``buf[start:end]``, offsets of wrap-prone
        ones); ``start`` and ``end`` are line starts (or the ends of ``buf``)."""
        out: list[int] = []
        joins: set[int] = set()
        size = len(buf)
        end = size if end is None else end
        while start < end:  # line-aligned blocks that stay in the CPU cache
            stop = (
                end
                if start + BLOCK_BYTES >= end
                else buf.rfind(b"\n", start, start + BLOCK_BYTES) + 1
            )
            if stop <= start:  # one line longer than a block
                stop = buf.find(b"\n", start + BLOCK_BYTES, end) + 1 or end
            self._block(buf if start == 0 and stop == size else buf[start:stop], start, out, joins)
            start = stop
        out.sort()
        return out, joins

    def _block(self, block: bytes, offset: int, out: list[int], joins: set[int]) -> None:
        # Deleting NUL takes CPython's other translate loop, a third faster (1.1 vs 1.6 ms/MB):
        # no literal holds a NUL, and offsets in ``norm`` are never used (_locate reads ``block``)
        norm = block.translate(self._table, b"\x00")
        lines = set(norm.split(b"\n"))  # no literal holds a newline; a CR stays in its line
        unseen = lines - self._seen  # lines holding a literal, and lines never seen
        wanted: set[int] = set()
        new: set[bytes] = set()
        hit = self._hit
        for line in unseen:
            ks = hit.get(line)
            if ks is None:
                new.add(line)
            else:
                wanted |= ks
        if new:
            wanted |= self._learn(new)
        if wanted:
            self._locate(block, offset, wanted, out, joins)
        if self._table is NORMALISE:  # distinct lines stay distinct: fold hex digits too
            self._poor = self._poor + 1 if len(new) * 8 > len(lines) > 64 else 0
            if self._poor >= POOR_BLOCKS:
                self._use(HEX_NORMALISE)

    def _locate(
        self, block: bytes, offset: int, wanted: set[int], out: list[int], joins: set[int]
    ) -> None:
        """Exact occurrences of the literals behind the normalised literals ``wanted``."""
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

    def _learn(self, new: set[bytes]) -> frozenset[int]:
        """Sort new distinct lines into those holding a normalised literal and the rest; the
        indices of the normalised literals they hold."""
        size = sum(map(len, new)) + LINE_OVERHEAD * len(new)
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
        held: set[int] = set()
        for line, ks in found.items():
            self._hit[line] = frozenset(ks)
            held |= ks
        self._seen.update(new.difference(found))
        return frozenset(held)
