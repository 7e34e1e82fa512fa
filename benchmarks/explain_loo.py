"""How the catalogue would score on threads it was not written from: a leave-one-out estimate on
the DEV part of the corpus.

Usage::

    python benchmarks/explain_loo.py /work/corpora/explain [--batch 1|b2|...|all] [--min-others K]
        [--show-misses]

Dev figures tell how well the rules fit the threads they were written from; the frozen test part
scores far lower. This estimate removes from each dev thread what was learnt from it alone:

- every catalogue signal that fires in that thread and in fewer than ``K`` (default 1) *other* dev
  threads (a phrase written for one thread is no rule yet) is switched off for it;
- the failure-class priors are re-estimated without that thread's counts (the same counting as
  ``explain_priors.py``; a thread of a batch the priors were not estimated from has none).

``--batch`` (``1``, ``1,b2,b3``, ``all``) chooses the threads, which are also the corpus "other
threads" are counted in.

Then the thread is explained again (both feeds) and scored like ``explain_corpus.py``. A change
that only fits dev threads leaves this estimate unchanged; a general one (a rule that fires in
many threads) moves it. The frozen test ids are dropped before any file is opened.
"""

from __future__ import annotations

import argparse
import contextlib
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from explain_corpus import load_labels, score
from explain_priors import DECIDES, _report, _residual


def _cats(row: dict[str, str]) -> list[str]:
    cats = [c.strip() for c in row["categories"].split(";") if c.strip()]
    return ["other" if c == "negative" else c for c in cats]


def survey(rows: list[dict[str, str]], folder: Path) -> tuple[dict[str, set[str]], dict[str, Any]]:
    """Per thread: the signals that fired (either feed) and its share of the prior counts."""
    from rankmap.explain.priors import HAND, leading_class

    fired: dict[str, set[str]] = {}
    contrib: dict[str, dict[str, dict[str, float]]] = {}
    for row in rows:
        seen: set[str] = set()
        mine: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        for mode in ("paste", "log+flags"):
            report = _report(row, folder, mode)
            if report is None:
                continue
            sigs = set(report.sections["explain"].get("signals") or ())
            seen |= sigs
            classes = sigs & set(HAND)
            if not classes or _residual(report, classes) >= DECIDES:
                continue
            cls = leading_class(classes)
            cats = _cats(row)
            for c in cats:
                mine[cls][c] += 0.5 / len(cats)
        fired[row["id"]] = seen
        contrib[row["id"]] = mine
    return fired, contrib


@contextlib.contextmanager
def without(drop: set[str], counts: dict[str, dict[str, float]]) -> Iterator[None]:
    """The catalogue without the signals ``drop`` and with the priors from ``counts``."""
    from rankmap.explain import docread, priors
    from rankmap.explain.catalogue import SIGNALS

    saved_signals, saved_counts = docread.SIGNALS, priors.COUNTS
    priors.COUNTS = counts
    try:
        sigs = []
        for s in SIGNALS:
            if s.id in drop:
                continue
            if s.id in priors.HAND:
                s = replace(s, supports=priors.capped(s.id, tuple(priors.prior(s.id).items())))
            sigs.append(s)
        docread.SIGNALS = tuple(sigs)
        yield
    finally:
        docread.SIGNALS, priors.COUNTS = saved_signals, saved_counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--batch", default="all")
    ap.add_argument("--min-others", type=int, default=1, metavar="K")
    ap.add_argument("--mode", choices=("paste", "log+flags", "both"), default="both")
    ap.add_argument("--show-misses", action="store_true")
    args = ap.parse_args()
    from rankmap.explain import priors

    rows = [r for r in load_labels(args.folder, None) if r.get("split") == "dev"]
    if args.batch != "all":  # one batch or several: "1,b2,b3"
        rows = [r for r in rows if r.get("batch") in args.batch.split(",")]
    fired, contrib = survey(rows, args.folder)  # every thread: what is learnt from each
    df: dict[str, int] = defaultdict(int)
    for sigs in fired.values():
        for s in sigs:
            df[s] += 1
    counted = set(getattr(priors, "BATCHES", "all").split(","))
    modes = ("paste", "log+flags") if args.mode == "both" else (args.mode,)
    results = {m: {"rows": []} for m in modes}
    dropped = 0
    for row in rows:
        tid = row["id"]
        drop = {s for s in fired[tid] if df[s] - 1 < args.min_others} - set(priors.HAND)
        dropped += bool(drop)
        mine = contrib[tid] if counted & {"all", row.get("batch")} else {}  # in the priors?
        counts = {
            cls: {c: v - mine.get(cls, {}).get(c, 0.0) for c, v in d.items()}
            for cls, d in priors.COUNTS.items()
        }
        with without(drop, counts):
            for m in modes:
                r = score([row], args.folder, m, args.show_misses)
                results[m]["rows"].append(r)
    print(f"[dev loo batch={args.batch} K={args.min_others}] {dropped} threads lost a signal")
    for m in modes:
        rs = results[m]["rows"]
        pos = sum(r["threads"] for r in rs)
        neg = sum(r["negatives"] for r in rs)
        t1 = sum(r["top1"] * r["threads"] for r in rs)
        na = sum(r["no_answer"] * r["threads"] for r in rs)
        fa = sum(r["false_alarms_on_negatives"] * r["negatives"] for r in rs)
        print(
            f"  {m}: {pos} threads, top-1 {t1 / max(1, pos):.1%}, no answer {na / max(1, pos):.1%},"
            f" false alarms on {neg} negatives {fa / max(1, neg):.1%}"
        )
        for r in rs:
            for miss in r["misses"]:
                if not miss.startswith(("RANKS", "BUS")):
                    print("   ", miss)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
