"""Estimate the failure-class priors of ``rankmap.explain.priors`` from the DEV part of the corpus.

Usage::

    python benchmarks/explain_priors.py /work/corpora/explain [--batch 1|b2|...|all] [--write]

For every dev thread (the frozen test ids are never read: their rows are dropped before any file
is opened) both feeds are explained (the whole paste; the log with the restated launch and env).
Where a failure class of ``priors.HAND`` matched and nothing else decides — the leader's points
without the classes' own weights stay under ``DECIDES`` — the thread's confirmed categories are
counted for the most specific class that matched (``priors.ORDER``; each feed counts half; a
thread with two categories half to each; a negative thread counts to ``other``): the prior is
what the class alone makes likely when it is all there is. ``--write`` replaces the generated
block of ``src/rankmap/explain/priors.py``; without it the counts and the resulting priors are
printed. ``--batch`` estimates from some batches only (``1`` or ``1,b2,b3``: for a leave-one-
batch-out check, estimate on batch 1, score ``explain_corpus.py --batch b2``; or keep a new
batch held out). ``--add`` adds the counts of ``--batch`` to those already in the generated
block (a support measured noisy on either part stays capped, at the lower precision): for
batches the block has not counted, when the folder no longer holds the dev rows it was estimated
from (session 14 on: only the test parts of b1-b20 were rebuilt).
"""

from __future__ import annotations

import argparse
import io
import pprint
import re
import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

from explain_corpus import HERE, load_labels, parse_env

PRIORS_PY = HERE.parent / "src" / "rankmap" / "explain" / "priors.py"
BLOCK = re.compile(r"(# BEGIN GENERATED[^\n]*\n)(.*?)(# END GENERATED)", re.S)


NOISY_MIN = 4  # a signal's precision is measured on at least this many dev threads
NOISY_PRECISION = 0.25  # at most this share of them confirm the category: noisy
DECIDES = 3.0  # residual points (without the failure classes) at which other evidence decides


def _residual(report: Any, classes: set[str]) -> float:
    """The leader's points once the failure classes' own weights are taken out."""
    from rankmap.explain.catalogue import SIGNALS

    scores = dict(report.sections["explain"].get("scores") or {})
    for sig in SIGNALS:
        if sig.id in classes:
            for cat, w in sig.supports:
                scores[cat] = scores.get(cat, 0.0) - w
    return max(scores.values(), default=0.0)


def count(
    folder: Path, batch: str
) -> tuple[int, dict[str, dict[str, float]], dict[str, dict[str, float]]]:
    """Categories of the dev threads where a failure class matched and nothing else decides
    (the leader's points without the classes' own weights below :data:`DECIDES`), per class;
    each of the two feeds (whole paste, log + flags) of a thread counts half.

    Also the *noisy* signal supports: a (signal, category) that matched in at least
    ``NOISY_MIN`` dev threads of which at most ``NOISY_PRECISION`` confirm the category (its
    measured precision, returned per signal and category)."""
    from rankmap.explain.catalogue import SIGNALS

    SUPPORTS = {sig.id: sig.supports for sig in SIGNALS}  # noqa: N806
    from rankmap.explain.priors import HAND, leading_class

    rows = [r for r in load_labels(folder, None) if r.get("split") == "dev"]
    if batch != "all":  # one batch or several: "1,b2,b3"
        rows = [r for r in rows if r.get("batch") in batch.split(",")]
    counts: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    fired: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])  # (signal, cat): n, right
    for row in rows:
        cats = [c.strip() for c in row["categories"].split(";") if c.strip()]
        cats = ["other" if c == "negative" else c for c in cats]
        seen: set[str] = set()
        for mode in ("paste", "log+flags"):
            report = _report(row, folder, mode)
            if report is None:
                continue
            seen |= set(report.sections["explain"].get("signals") or ())
            classes = set(report.sections["explain"].get("signals") or ()) & set(HAND)
            if not classes or _residual(report, classes) >= DECIDES:
                continue
            cls = leading_class(classes)  # the prior the scoring will use
            for c in cats:
                counts[cls][c] += 0.5 / len(cats)
        for sid in seen - set(HAND):
            for cat, w in SUPPORTS.get(sid, ()):
                if w > 0:
                    fired[sid, cat][0] += 1
                    fired[sid, cat][1] += cat in cats
    out = {k: {c: round(v, 2) for c, v in sorted(d.items())} for k, d in sorted(counts.items())}
    caps: dict[str, dict[str, float]] = defaultdict(dict)
    for (sid, cat), (n, right) in sorted(fired.items()):
        if n >= NOISY_MIN and right / n <= NOISY_PRECISION:
            caps[sid][cat] = round(right / n, 2)
    return len(rows), out, dict(caps)


def _report(row: dict[str, str], folder: Path, mode: str) -> Any:
    from rankmap.adapters.local import explain_files
    from rankmap.errors import RankMapError

    tid = row["id"]
    if mode == "paste":
        paste = folder / "pastes" / f"{tid}.txt"
        if not paste.exists():
            return None
        return explain_files([Path("-")], stdin=io.StringIO(paste.read_text(errors="replace")))
    log = folder / "logs" / f"{tid}.log"
    if not log.exists() or not log.stat().st_size:
        return None
    launch = (row.get("launch_restated") or "").strip() or None
    try:
        return explain_files([log], launch=launch, env=parse_env(row.get("env_restated") or ""))
    except RankMapError:  # a restated launch rankmap cannot split: scored as an error there too
        return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--batch", default="all")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--add", action="store_true", help="add to the counts already in the block")
    args = ap.parse_args()
    n, counts, caps = count(args.folder, args.batch)
    batches = args.batch
    if args.add:
        from rankmap.explain import priors

        n += priors.DEV_THREADS
        batches = f"{priors.BATCHES}+{args.batch}"
        merged = {k: dict(v) for k, v in priors.COUNTS.items()}
        for cls, cats in counts.items():
            for cat, v in cats.items():
                merged.setdefault(cls, {})[cat] = round(merged.get(cls, {}).get(cat, 0.0) + v, 2)
        counts = {k: dict(sorted(v.items())) for k, v in sorted(merged.items())}
        # a support found noisy on either part stays capped (the lower precision is kept)
        merged_caps = {k: dict(v) for k, v in priors.NOISY.items()}
        for sid, cats in caps.items():
            for cat, precision in cats.items():
                old = merged_caps.setdefault(sid, {}).get(cat)
                merged_caps[sid][cat] = precision if old is None else min(old, precision)
        caps = {k: dict(sorted(v.items())) for k, v in sorted(merged_caps.items())}
    body = f"DEV_THREADS = {n}  # batch {batches}\n"
    body += f"BATCHES = {batches!r}  # the dev batches counted\n"
    body += "COUNTS: dict[str, dict[str, float]] = "
    body += pprint.pformat(counts, width=96, sort_dicts=True) + "\n"
    body += "# measured precision of noisy context supports (signal -> category -> precision)\n"
    body += "NOISY: dict[str, dict[str, float]] = "
    body += pprint.pformat(caps, width=96, sort_dicts=True) + "\n"
    if args.write:
        text = PRIORS_PY.read_text()
        PRIORS_PY.write_text(BLOCK.sub(lambda m: m.group(1) + body + m.group(3), text, count=1))
        if shutil.which("ruff"):  # the repo's formatting (the generated block is code)
            subprocess.run(["ruff", "format", "-q", str(PRIORS_PY)], check=False)
        print(f"wrote {PRIORS_PY} ({n} dev threads)")
    else:
        print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
