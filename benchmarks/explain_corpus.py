"""Score ``rankmap explain`` on a folder of real public threads (kept outside the repo).

Usage::

    python benchmarks/explain_corpus.py /work/corpora/explain [--split dev|test|all]
        [--labels benchmarks/corpora/explain_threads.tsv] [--show-misses] [--json]

The folder holds ``pastes/<id>.txt`` (the whole issue as the reporter pasted it) and
``logs/<id>.log`` (program output only). Labels (``id, url, categories, framework, launcher,
context_restated, launch_restated, env_restated, ranks, bus_ids, confirmation, split``) come
from ``--labels`` (default: the committed ``benchmarks/corpora/explain_threads.tsv``, else the
folder's ``labels_*.tsv``). Categories are ``;``-separated; ``negative`` marks a thread whose
failure is outside the GPU-mapping family.

Three ways of feeding each thread:
- ``paste``: the whole issue on stdin;
- ``log+flags``: the log file with ``--launch`` from ``launch_restated`` and ``--env`` from
  ``env_restated``;

and for each: top-1 (the first finding's category is one the thread supports; a warning best
guess counts, and so does an info "possible cause" — ``top1_alerting`` counts only a first finding
at warning or error severity), top-3 (among the first three findings' categories), "no answer" (the first finding
is RM003, "nothing recognised"), false alarms on negatives (a finding of a mapping category above
info), ranks / bus ids exact where the label states them, per category, framework and split.
Tune on ``--split dev`` only.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_LABELS = HERE / "corpora" / "explain_threads.tsv"
NOT_MAPPING = {"other"}


def _batch(path: Path) -> str:
    """``explain_threads.tsv`` is batch 1; ``explain_threads_b2.tsv`` is batch ``b2``."""
    suffix = path.stem.removeprefix("explain_threads").lstrip("_")
    return suffix or "1"


def load_labels(folder: Path, labels: Path | None) -> list[dict[str, str]]:
    committed = sorted((HERE / "corpora").glob("explain_threads*.tsv"))
    files = [labels] if labels else committed
    if not files:
        files = sorted(folder.glob("labels_*.tsv"))
    rows: dict[str, dict[str, str]] = {}
    for f in files:
        with f.open(newline="") as fh:
            for row in csv.DictReader(fh, delimiter="\t"):
                if row.get("id"):
                    row["batch"] = _batch(f)
                    rows[row["id"]] = row
    frozen = sorted((HERE / "corpora").glob("explain_test_ids*.txt"))
    if frozen:  # the frozen test parts (one list per batch) decide the split
        lines = [ln.strip() for f in frozen for ln in f.read_text().splitlines()]
        test = {t for t in lines if t and not t.startswith("#")}
        for tid, row in rows.items():
            row["split"] = "test" if tid in test else "dev"
    return list(rows.values())


DIGESTS = HERE / "corpora" / "explain_paste_digests.tsv"


def changed_pastes(folder: Path, rows: list[dict[str, str]]) -> list[str]:
    """Ids whose paste differs from the one the committed digests were taken of (a rebuilt
    folder that measures other text)."""
    import hashlib

    if not DIGESTS.exists():
        return []
    with DIGESTS.open(newline="") as fh:
        want = {r["id"]: r["paste_sha256"] for r in csv.DictReader(fh, delimiter="\t")}
    out = []
    for row in rows:
        paste = folder / "pastes" / f"{row['id']}.txt"
        digest = want.get(row["id"])
        if digest in (None, "-") or not paste.exists():
            continue
        if hashlib.sha256(paste.read_bytes()).hexdigest() != digest:
            out.append(row["id"])
    return out


def parse_env(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    try:
        words = shlex.split(text or "")
    except ValueError:
        words = (text or "").split()
    for w in words:
        k, eq, v = w.partition("=")
        if eq and k.replace("_", "").isalnum():
            out[k.strip(",;")] = v.strip(",;")
    return out


def _command_or_none(restated: str) -> str | None:
    """The restated launch as ``--launch`` gets it; a restatement that is prose, not a command
    (an unclosed quote: "the repo's iterable dataset"), is no launch at all — a user would not
    pass it, and rankmap rightly refuses it with exit 2."""
    text = restated.strip()
    try:
        shlex.split(text)
    except ValueError:
        return None
    return text or None


def run_one(row: dict[str, str], folder: Path, mode: str) -> dict[str, Any]:
    from rankmap.adapters.local import explain_files
    from rankmap.errors import RankMapError

    tid = row["id"]
    try:
        if mode == "paste":
            paste = folder / "pastes" / f"{tid}.txt"
            if not paste.exists():
                return {"skipped": True, "missing": True}
            text = paste.read_text(errors="replace")
            report = explain_files([Path("-")], stdin=io.StringIO(text))
        else:
            log = folder / "logs" / f"{tid}.log"
            if not log.exists() or not log.stat().st_size:
                return {"skipped": True}
            launch = _command_or_none(row.get("launch_restated") or "")
            env = parse_env(row.get("env_restated") or "")
            report = explain_files([log], launch=launch, env=env)
    except RankMapError as exc:
        return {"error": str(exc)}
    fs = report.ordered_findings()
    return {
        "cats": [f.category for f in fs],
        "codes": [f.code for f in fs],
        "sev": [f.severity.value for f in fs],
        "ranks": list(fs[0].ranks) if fs else [],
        "devices": list(fs[0].devices) if fs else [],
        "mapping_alarm": any(
            f.category not in NOT_MAPPING and f.severity.value != "info" for f in fs
        ),
    }


def _framework(label: str) -> str:
    """Free-text framework labels grouped: ``PyTorch DDP`` and ``pytorch`` are one framework."""
    word = label.strip().lower().split("(")[0].split("/")[0].split()
    return word[0] if word else "?"


def _ints(text: str) -> list[int] | None:
    parts = [p.strip() for p in (text or "").replace(";", ",").split(",") if p.strip()]
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return sorted({int(p) for p in parts})


def _devices(text: str) -> set[str]:
    """Device ids in one spelling: PCI bus ids canonical (``0000:4f:00.0``, ``00000000:4F:00.0``
    and ``4F:00.0`` are one GPU), UUIDs lowercase. Bare numbers (nvidia-smi indices, NCCL bus
    numbers) are not device ids and are left out."""
    from rankmap.pci import try_normalize_bus_id

    out: set[str] = set()
    for part in text.replace(";", ",").split(","):
        item = part.strip().lower()
        if item.startswith(("gpu-", "mig-")):
            out.add(item)
        elif ":" in item and (bus := try_normalize_bus_id(item)):
            out.add(bus.lower())
    return out


def score(rows: list[dict[str, str]], folder: Path, mode: str, show: bool) -> dict[str, Any]:
    tally: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
    total = {"pos": 0, "top1": 0, "top1_alerting": 0, "top3": 0, "noans": 0, "neg": 0, "alarm": 0}
    exact = {"ranks": [0, 0], "bus": [0, 0]}
    misses = []
    missing: list[str] = []
    detail: list[str] = []
    for row in rows:
        res = run_one(row, folder, mode)
        if res.get("missing"):
            missing.append(row["id"])
        if res.get("skipped"):
            continue
        want = {c.strip() for c in row["categories"].split(";") if c.strip()}
        if "error" in res:
            res = {"cats": ["<error>"], "codes": ["<error>"], "sev": [], "mapping_alarm": False}
        detail.append(
            "\t".join(
                (
                    row["id"],
                    row.get("batch", "?"),
                    row.get("split", "?"),
                    mode,
                    ";".join(sorted(want)),
                )
                + tuple(",".join(res[k][:3]) for k in ("codes", "cats", "sev"))
            )
        )
        if "negative" in want:
            total["neg"] += 1
            total["alarm"] += int(res["mapping_alarm"])
            if res["mapping_alarm"] and show:
                misses.append(f"ALARM {row['id']}: {res['codes'][:3]} {res['cats'][:3]}")
            continue
        total["pos"] += 1
        noans = res["codes"][:1] == ["RM003"]
        # "nothing recognised" is category other, but never an answer
        cats = [c for c, code in zip(res["cats"], res["codes"], strict=True) if code != "RM003"]
        t1 = not noans and bool(cats) and cats[0] in want
        t3 = bool(set(cats[:3]) & want)
        total["top1"] += t1
        total["top1_alerting"] += t1 and res["sev"][:1] in (["warning"], ["error"])
        total["top3"] += t3
        total["noans"] += noans
        keys = (
            f"category={sorted(want)[0]}",
            f"framework={_framework(row.get('framework') or '?')}",
            f"split={row.get('split', '?')}",
        )
        for key in keys:
            tally[key]["n"][0] += 1
            tally[key]["n"][1] += t1
            tally[key]["n"][2] += t3
        want_ranks = _ints(row.get("ranks", ""))
        if want_ranks is not None:  # stated in the text: the first finding must name them
            exact["ranks"][0] += 1
            exact["ranks"][1] += sorted(set(res.get("ranks") or [])) == want_ranks
            if show and sorted(set(res.get("ranks") or [])) != want_ranks:
                misses.append(f"RANKS {row['id']}: want {want_ranks}, got {res.get('ranks')}")
        want_devices = _devices(row.get("bus_ids") or "")
        if want_devices:  # bus ids / UUIDs stated in the text (indices: not a device id)
            exact["bus"][0] += 1
            got = _devices(",".join(res.get("devices") or []))
            exact["bus"][1] += got >= want_devices
            if show and not got >= want_devices:
                misses.append(f"BUS {row['id']}: want {sorted(want_devices)}, got {sorted(got)}")
        if not t1 and show:
            misses.append(
                f"MISS {row['id']} want {sorted(want)}: {res['codes'][:3]} {res['cats'][:3]}"
            )
    pos, neg = max(1, total["pos"]), max(1, total["neg"])
    return {
        "mode": mode,
        "threads": total["pos"],
        "negatives": total["neg"],
        "top1": round(total["top1"] / pos, 3),
        "top1_alerting": round(total["top1_alerting"] / pos, 3),
        "top3": round(total["top3"] / pos, 3),
        "no_answer": round(total["noans"] / pos, 3),
        "false_alarms_on_negatives": round(total["alarm"] / neg, 3),
        "ranks_exact": f"{exact['ranks'][1]}/{exact['ranks'][0]}",
        "bus_ids_exact": f"{exact['bus'][1]}/{exact['bus'][0]}",
        "per": {k: f"{v['n'][1]}/{v['n'][0]} top3 {v['n'][2]}" for k, v in sorted(tally.items())},
        "misses": misses,
        "missing": missing,
        "detail": detail,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path)
    ap.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    ap.add_argument("--labels", type=Path)
    ap.add_argument(
        "--batch", default="all", help="1 (the first collection), b2, ..., a list (1,b2,b3) or all"
    )
    ap.add_argument("--mode", choices=("paste", "log+flags", "both"), default="both")
    ap.add_argument("--show-misses", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--dump",
        type=Path,
        help="write one line per thread (id, batch, split, feed, labels, "
        "first three codes, categories, severities) to this TSV, to compare two versions",
    )
    args = ap.parse_args(argv)
    rows = load_labels(args.folder, args.labels)
    if args.split != "all":
        rows = [r for r in rows if r.get("split") == args.split]
    if args.batch != "all":  # one batch or several: "1,b2,b3"
        rows = [r for r in rows if r.get("batch") in args.batch.split(",")]
    modes = ("paste", "log+flags") if args.mode == "both" else (args.mode,)
    if changed := changed_pastes(args.folder, rows):
        print(
            f"note: {len(changed)} paste(s) differ from explain_paste_digests.tsv", file=sys.stderr
        )
    results = [score(rows, args.folder, m, args.show_misses) for m in modes]
    if args.dump:
        args.dump.write_text("".join(f"{ln}\n" for r in results for ln in r.pop("detail")))
    else:
        for r in results:
            r.pop("detail")
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0
    for r in results:
        print(
            f"[{args.split} batch={args.batch}] {r['mode']}: {r['threads']} threads, top-1 {r['top1']:.1%} "
            f"(at warning or error {r['top1_alerting']:.1%}), "
            f"top-3 {r['top3']:.1%}, no answer {r['no_answer']:.1%}, false alarms on "
            f"{r['negatives']} negatives {r['false_alarms_on_negatives']:.1%}, ranks exact "
            f"{r['ranks_exact']}, bus ids exact {r['bus_ids_exact']}"
        )
        if r["missing"]:
            print(
                f"    not in the folder (left out): {len(r['missing'])}: {' '.join(r['missing'])}"
            )
        for k, v in r["per"].items():
            print(f"    {k}: {v}")
        for m in r["misses"]:
            print("   ", m)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
