"""Real nvidia-smi pastes from public threads and docs against hand-made truth.

``tests/data/smi/corpus/`` holds each paste and its ``.truth.json`` (GPU count, indices, bus ids,
UUIDs, MIG devices, hosts); ``benchmarks/corpora/smi_pastes.tsv`` lists them with their form and
split, and what counts as right is defined once, in ``smi_corpus_score.py``. The test part must
be read 100% right; no paste of either part may end in anything but a one-line InputError.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from smi_corpus_score import CORPUS, Entry, manifest, score

ENTRIES = manifest()
TEST_IDS = [
    line.strip()
    for line in (Path(__file__).parents[2] / "benchmarks/corpora/smi_test_ids.txt")
    .read_text(encoding="utf-8")
    .splitlines()
    if line.strip() and not line.startswith("#")
]


def test_corpus_covers_every_form_with_enough_real_pastes() -> None:
    assert len(ENTRIES) >= 45
    forms = {e.form for e in ENTRIES}
    assert {
        "q_text",
        "q_partial",
        "table",
        "table_old",
        "table_prefixed",
        "table_rendered",
    } <= forms
    assert {"table_flat", "table_mixed", "xml", "xml_truncated", "csv", "list"} <= forms
    assert {"list_multihost", "negative"} <= forms
    assert len(list(CORPUS.glob("*.truth.json"))) == len(ENTRIES)


def test_frozen_test_ids_match_the_manifest_split() -> None:
    assert sorted(TEST_IDS) == sorted(e.id for e in ENTRIES if e.split == "test")


@pytest.mark.parametrize("entry", [e for e in ENTRIES if e.split == "test"], ids=lambda e: e.id)
def test_test_part_is_read_right(entry: Entry) -> None:
    result = score(entry)
    assert result.right, "\n".join(result.problems)


def test_no_paste_crashes_and_dev_part_is_nearly_right() -> None:
    results = [score(e) for e in ENTRIES if e.split == "dev"]
    assert not [r.entry.id for r in results if r.crashed]
    wrong = [f"{r.entry.id}: {r.problems[0]}" for r in results if not r.right]
    assert len(wrong) <= len(results) // 20, "\n".join(wrong)
