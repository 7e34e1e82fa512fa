"""docs/findings.md is generated from the code registry and every code is documented."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import rankmap
from rankmap.codes import all_codes, markdown
from rankmap.findings import CATEGORIES

DOC = Path(__file__).parents[1] / "docs" / "findings.md"


def test_findings_md_matches_the_registry() -> None:
    assert DOC.read_text(encoding="utf-8") == markdown(), (
        "docs/findings.md is stale: run `python -m rankmap.codes > docs/findings.md`"
    )


def test_python_m_rankmap_codes_prints_the_same() -> None:
    src = Path(rankmap.__file__).parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "rankmap.codes"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        check=True,
    )
    assert out.stdout == DOC.read_text(encoding="utf-8")


@pytest.mark.parametrize("info", all_codes(), ids=lambda c: c.code)
def test_every_code_is_documented(info) -> None:
    assert re.fullmatch(r"RM\d{3}", info.code)
    assert info.category in CATEGORIES
    for field in ("summary", "cause", "fix", "example"):
        assert getattr(info, field).strip(), f"{info.code}.{field} is empty"
    assert f"## {info.code}" in DOC.read_text(encoding="utf-8")
