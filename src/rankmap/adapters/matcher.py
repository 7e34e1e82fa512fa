"""The multi-literal matcher for big inputs: hyperscan with the optional extra, else pure Python.

``pip install 'rankmap[fast]'`` installs `hyperscan <https://python-hyperscan.readthedocs.io>`_
(Intel's multi-pattern regex engine; it scans many literals in one pass over the buffer at
memory speed). Either way the reader searches **every** literal of
:func:`rankmap.explain.prefilter.literals` (the anchors and every log-side key of the signal
catalogue) in the whole of every input too big to be read as one document: with hyperscan, or
with :class:`rankmap.explain.prefilter.LineSetMatcher` where it is not installed
(:func:`big_input_matcher`). ``RANKMAP_PURE_SCAN=1`` forces the pure path (benchmarks, tests).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rankmap.explain.prefilter import LineSetMatcher, literals
from rankmap.explain.reader import Matcher

PURE_ENV = "RANKMAP_PURE_SCAN"


class HyperscanMatcher:
    """Positions of every anchor and catalogue regex in a buffer (end offsets), join subset."""

    def __init__(self, db: Any, join_ids: frozenset[int], count: int, scratch: Any = None) -> None:
        self._db = db
        self._join_ids = join_ids
        self.patterns = count
        self._scratch = scratch  # None: the database's own (one thread at a time)

    def for_thread(self) -> HyperscanMatcher:
        """The same matcher with its own scratch space, for another thread (hyperscan scans
        without the GIL; a scratch space serves one scan at a time)."""
        import hyperscan

        return HyperscanMatcher(
            self._db, self._join_ids, self.patterns, hyperscan.Scratch(self._db)
        )

    def hits(
        self, buf: bytes, start: int = 0, end: int | None = None
    ) -> tuple[list[int], set[int]]:
        """(sorted hit positions in ``buf[start:end]``, positions of messages a terminal may
        have wrapped). The whole buffer is scanned (no copy); hits outside are dropped."""
        out: list[int] = []
        joins: set[int] = set()
        join_ids = self._join_ids
        stop = len(buf) if end is None else end

        def on_match(pid: int, first: int, last: int, flags: int, ctx: object) -> None:
            pos = max(0, last - 1)
            if start <= pos < stop:
                out.append(pos)
                if pid in join_ids:
                    joins.add(pos)

        self._db.scan(buf, match_event_handler=on_match, scratch=self._scratch)
        out.sort()
        return out, joins


def _expressions() -> tuple[list[bytes], list[int], frozenset[int]]:
    """The literals of :func:`rankmap.explain.prefilter.literals` as hyperscan expressions.

    A catalogue key is a necessary condition of its signal (:data:`rankmap.explain.catalogue.KEYS`):
    the line it is on becomes a candidate and the signal's regex runs on it later, so literal
    matching (hyperscan's fastest mode) is enough here.
    """
    lits = literals()
    exprs = [re.escape(lit.text) for lit in lits]
    flags = [1 if lit.caseless else 0 for lit in lits]
    joins = frozenset(i for i, lit in enumerate(lits) if lit.join)
    return exprs, flags, joins


@lru_cache(maxsize=1)
def _compiled() -> HyperscanMatcher | None:
    try:
        import hyperscan  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    exprs, caseless, joins = _expressions()
    flags = [hyperscan.HS_FLAG_CASELESS if c else 0 for c in caseless]
    key = hashlib.sha256(
        repr((exprs, flags, getattr(hyperscan, "__version__", ""))).encode()
    ).hexdigest()[:16]
    cache = _cache_dir() / f"hyperscan-{key}.db"
    kept = _usable(hyperscan, exprs, flags)
    kept_joins = frozenset(n for n, i in enumerate(kept) if i in joins)
    db = _load(hyperscan, cache)
    if db is None:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(
            expressions=[exprs[i] for i in kept],
            ids=list(range(len(kept))),
            elements=len(kept),
            flags=[flags[i] for i in kept],
        )
        _store(hyperscan, db, cache)
    return HyperscanMatcher(db, kept_joins, len(kept))


def _usable(hs: Any, exprs: list[bytes], flags: list[int]) -> list[int]:
    """Indices of the expressions hyperscan accepts (lookarounds it does not)."""
    out = []
    for i, expr in enumerate(exprs):
        if b"(?=" in expr or b"(?!" in expr or b"(?<" in expr:
            continue  # zero-width assertions: the line recognisers still apply them
        out.append(i)
    return out


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rankmap"


def _load(hs: Any, path: Path) -> Any:
    """A database compiled before (compiling ~130 patterns takes about a second)."""
    try:
        db = hs.loadb(path.read_bytes(), hs.HS_MODE_BLOCK)
        db.scratch = hs.Scratch(db)  # a loaded database comes without scratch space
        db.scan(b"NCCL WARN", match_event_handler=lambda *args: None)
    except (OSError, ValueError, hs.error):
        return None
    return db


def _store(hs: Any, db: Any, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(hs.dumpb(db))
        tmp.replace(path)
    except (OSError, hs.error):
        pass  # a read-only home: compile every time


def fast_matcher() -> HyperscanMatcher | None:
    """The compiled matcher, or ``None`` (hyperscan not installed, or the pure path forced)."""
    if os.environ.get(PURE_ENV) == "1":
        return None
    return _compiled()


def big_input_matcher() -> Matcher:
    """The matcher for inputs too big to read whole: hyperscan where installed, otherwise the
    pure-Python :class:`LineSetMatcher`; both search every literal of the prefilter everywhere."""
    return fast_matcher() or LineSetMatcher()


def pattern_count() -> int:
    """How many patterns the fast path searches (anchors + catalogue regexes)."""
    exprs: Sequence[bytes] = _expressions()[0]
    return len(exprs)
