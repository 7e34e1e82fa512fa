"""One multi-pattern matcher for every signal, with the optional ``hyperscan`` extra.

``pip install 'rankmap[fast]'`` installs `hyperscan <https://python-hyperscan.readthedocs.io>`_
(Intel's multi-pattern regex engine; it scans many literals and regexes in one pass over the
buffer at memory speed). With it, the reader searches **every** anchor of
:mod:`rankmap.explain.anchors` and every log-side regex of the signal catalogue
(:mod:`rankmap.explain.catalogue`) in the whole of every input, whatever its size. Without it
the reader keeps its pure-Python path (``bytes.find`` per anchor; the middle of inputs over
``FULL_SCAN_LIMIT`` only for the core anchors), which :func:`fast_matcher` signals by returning
``None``. ``RANKMAP_PURE_SCAN=1`` forces the pure path (benchmarks, tests).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from rankmap.explain.anchors import ANCHORS, JOIN_ANCHORS
from rankmap.explain.catalogue import SIGNALS

PURE_ENV = "RANKMAP_PURE_SCAN"


class HyperscanMatcher:
    """Positions of every anchor and catalogue regex in a buffer (end offsets), join subset."""

    def __init__(self, db: Any, join_ids: frozenset[int], count: int) -> None:
        self._db = db
        self._join_ids = join_ids
        self.patterns = count

    def hits(self, buf: bytes) -> tuple[list[int], set[int]]:
        """(sorted hit positions, positions of messages a terminal may have wrapped)."""
        out: list[int] = []
        joins: set[int] = set()
        join_ids = self._join_ids

        def on_match(pid: int, start: int, end: int, flags: int, ctx: object) -> None:
            pos = max(0, end - 1)
            out.append(pos)
            if pid in join_ids:
                joins.add(pos)

        self._db.scan(buf, match_event_handler=on_match)
        out.sort()
        return out, joins


def _expressions() -> tuple[list[bytes], list[int], frozenset[int]]:
    """Anchors (exact) and the catalogue's prefilter keys (caseless literals), deduplicated.

    A key is a necessary condition of its signal (:data:`rankmap.explain.catalogue.KEYS`): the
    line it is on becomes a candidate and the signal's regex runs on it later, so literal
    matching (hyperscan's fastest mode) is enough here.
    """
    exprs: list[bytes] = []
    flags: list[int] = []
    joins: set[int] = set()
    for anchor in ANCHORS:
        if anchor in JOIN_ANCHORS:
            joins.add(len(exprs))
        exprs.append(re.escape(anchor))
        flags.append(0)
    keys = sorted({k for sig in SIGNALS if "log" in sig.where for k in sig.keys})
    for key in keys:
        exprs.append(re.escape(key.encode()))
        flags.append(1)
    return exprs, flags, frozenset(joins)


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


def pattern_count() -> int:
    """How many patterns the fast path searches (anchors + catalogue regexes)."""
    exprs: Sequence[bytes] = _expressions()[0]
    return len(exprs)
