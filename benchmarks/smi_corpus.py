"""Accuracy of ``--machine PASTE`` on the real nvidia-smi paste corpus, per form and per split.

The corpus is ``tests/data/smi/corpus/`` (list: ``benchmarks/corpora/smi_pastes.tsv``, frozen
test ids: ``benchmarks/corpora/smi_test_ids.txt``); what counts as right is defined once, in
``tests/doctor/smi_corpus_score.py``. Readers are tuned on the dev split only.

    PYTHONPATH=src python benchmarks/smi_corpus.py [--verbose]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "doctor"))

from smi_corpus_score import Score, score_all  # noqa: E402


def _line(label: str, scores: list[Score]) -> str:
    right = sum(s.right for s in scores)
    crashes = sum(s.crashed for s in scores)
    return f"{label:<16} {right:>3}/{len(scores):<3} {100 * right / len(scores):5.1f}%  crashes {crashes}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", action="store_true", help="list every wrong paste")
    parser.add_argument("--split", choices=("dev", "test"), help="only this split")
    args = parser.parse_args()
    scores = [s for s in score_all() if args.split in (None, s.entry.split)]
    by_split: dict[str, list[Score]] = defaultdict(list)
    by_form: dict[str, list[Score]] = defaultdict(list)
    for s in scores:
        by_split[s.entry.split].append(s)
        by_form[s.entry.form].append(s)
    print("per split")
    for split in sorted(by_split):
        print("  " + _line(split, by_split[split]))
    print("per form")
    for form in sorted(by_form):
        print("  " + _line(form, by_form[form]))
    print("  " + _line("all", scores))
    if args.verbose:
        for s in scores:
            if not s.right:
                print(f"\n{s.entry.id} ({s.entry.form}, {s.entry.split}):")
                for problem in s.problems[:6]:
                    print(f"    {problem}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
