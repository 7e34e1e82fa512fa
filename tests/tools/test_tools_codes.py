"""The tools' finding codes stay in their sub-range and are documented; link share via profile."""

from __future__ import annotations

import argparse
import io
import re
from pathlib import Path
from types import SimpleNamespace

from rankmap.cli.bench import _local_link
from rankmap.cli.context import AppContext
from rankmap.codes import all_codes, lookup, markdown

TOOLS_CODES = ("RM990", "RM991", "RM992", "RM993", "RM994")


def test_tools_codes_are_registered_in_x90_x99() -> None:
    for code in TOOLS_CODES:
        info = lookup(code)
        assert re.fullmatch(r"RM\d9\d", code)
        assert info.summary and info.cause and info.fix and info.example
    assert {c.code for c in all_codes()} >= set(TOOLS_CODES)


def test_findings_doc_is_regenerated() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "findings.md"
    text = doc.read_text(encoding="utf-8")
    for code in TOOLS_CODES:
        assert f"## {code}" in text
    assert text == markdown()  # regenerate: python -m rankmap.codes > docs/findings.md


def test_link_share_comes_from_the_profile_through_cuda_visible_devices() -> None:
    ctx = AppContext(io.StringIO(), io.StringIO(), io.StringIO(), {"CUDA_VISIBLE_DEVICES": "4,5"})
    world = SimpleNamespace(device=SimpleNamespace(type="cuda"), local_rank=1)
    link = _local_link(argparse.Namespace(machine="dgx-h100"), ctx, world)
    assert link is not None and (link.gbps, link.description) == (450.0, "NVLink 4 x18")
    ws = _local_link(argparse.Namespace(machine="workstation-4gpu"), ctx, world)
    assert ws is None  # GPU 5 does not exist there
    cpu = SimpleNamespace(device=SimpleNamespace(type="cpu"), local_rank=0)
    assert _local_link(argparse.Namespace(machine="dgx-h100"), ctx, cpu) is None
