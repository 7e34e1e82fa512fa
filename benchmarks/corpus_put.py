"""Write one re-assembled paste or log into the explain corpus folder and compare it with the
committed digest (``benchmarks/corpora/explain_paste_digests.tsv``): the checker a rebuild of
the folder uses (benchmarks/corpora/REBUILD.md).

Usage::

    python benchmarks/corpus_put.py ID paste|log FILE [--folder DIR] [--raw]
    python benchmarks/corpus_put.py check ID [--folder DIR]

``FILE`` gets exactly one trailing newline (``--raw``: written as it is); an empty file stays
empty. Prints ``MATCH`` or ``MISMATCH expected N bytes, got M bytes`` (the size tells what to
fix: a cut too early or too late, a lost trailing space).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
DIGESTS = HERE / "corpora" / "explain_paste_digests.tsv"


def _digests() -> dict[str, dict[str, str]]:
    with DIGESTS.open(newline="") as fh:
        return {r["id"]: r for r in csv.DictReader(fh, delimiter="\t")}


def status(row: dict[str, str] | None, kind: str, data: bytes) -> str:
    """``MATCH`` or what differs from the committed digest of ``kind`` (paste or log)."""
    if row is None:
        return "UNKNOWN-ID"
    if hashlib.sha256(data).hexdigest() == row[f"{kind}_sha256"]:
        return "MATCH"
    return f"MISMATCH expected {row[f'{kind}_bytes']} bytes, got {len(data)} bytes"


def _path(folder: Path, tid: str, kind: str) -> Path:
    return folder / "pastes" / f"{tid}.txt" if kind == "paste" else folder / "logs" / f"{tid}.log"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("words", nargs="+", help="ID paste|log FILE, or: check ID")
    ap.add_argument("--folder", type=Path, default=Path("/work/corpora/explain"))
    ap.add_argument("--raw", action="store_true")
    args = ap.parse_args(argv)
    digests = _digests()
    if args.words[0] == "check" and len(args.words) == 2:
        tid = args.words[1]
        for kind in ("paste", "log"):
            path = _path(args.folder, tid, kind)
            have = status(digests.get(tid), kind, path.read_bytes()) if path.exists() else "missing"
            print(kind, have)
        return 0
    if len(args.words) != 3 or args.words[1] not in ("paste", "log"):
        ap.error("expected: ID paste|log FILE, or: check ID")
    tid, kind, src = args.words
    data = Path(src).read_bytes()
    if not args.raw:
        data = data.rstrip(b"\n") + b"\n" if data.strip() else b""
    dest = _path(args.folder, tid, kind)
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data)
    print(kind, tid, status(digests.get(tid), kind, data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
