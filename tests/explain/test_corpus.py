"""The corpus: real failures from public issue threads plus synthetic logs, with sidecars.

Each ``tests/data/explain/cases/<name>.log`` has ``<name>.json``: the context the reporter gave
(launch, env, machine, script), the confirmed root-cause category and, where the log states them,
the ranks and bus ids. The first finding's category must match in at least 90% of cases; ranks and
bus ids must be extracted exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rankmap.adapters.local import explain_files, load_machine
from rankmap.findings import Report

CASES = Path(__file__).parents[1] / "data" / "explain" / "cases"
NAMES = sorted(p.stem for p in CASES.glob("*.log"))


def _run(name: str) -> tuple[Report, dict[str, Any]]:
    meta = json.loads((CASES / f"{name}.json").read_text())
    ctx = meta.get("context", {})
    machines = []
    if ctx.get("machine"):
        spec = ctx["machine"]
        machines = load_machine(str(CASES / spec) if spec.endswith(".json") else spec)
    script = CASES / ctx["script"] if ctx.get("script") else None
    report = explain_files(
        [CASES / f"{name}.log"],
        launch=ctx.get("launch"),
        env=ctx.get("env"),
        machines=machines,
        script=script,
    )
    return report, meta


def test_corpus_is_big_enough() -> None:
    assert len(NAMES) >= 20
    real = [n for n in NAMES if not n.startswith("synthetic")]
    assert len(real) >= 10


def test_first_category_matches_in_90_percent() -> None:
    misses = []
    for name in NAMES:
        report, meta = _run(name)
        first = report.ordered_findings()[0]
        if first.category != meta["category"]:
            misses.append(f"{name}: got {first.code} {first.category}, want {meta['category']}")
    rate = 1 - len(misses) / len(NAMES)
    assert rate >= 0.9, "\n".join(misses)


@pytest.mark.parametrize("name", NAMES)
def test_ranks_and_bus_ids_exact(name: str) -> None:
    report, meta = _run(name)
    first = report.ordered_findings()[0]
    if "ranks" in meta:
        assert list(first.ranks) == meta["ranks"]
    if "devices" in meta:
        assert list(first.devices) == meta["devices"]
    assert first.evidence, "the first finding quotes the input"
