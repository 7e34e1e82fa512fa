"""Text output never passes terminal control sequences from input (profiles, logs) through."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

PROFILE = Path(__file__).parents[2] / "src" / "rankmap" / "profiles" / "workstation-4gpu.json"
EVIL = "evil\x1b]0;PWNED\x07\x1b[2J\x9b31m"


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--machine", "{p}"],
        ["check", "--machine", "{p}", "--", "torchrun", "--nproc-per-node", "8", "t.py"],
        ["topo", "--machine", "{p}"],
    ],
    ids=["doctor", "check", "topo"],
)
def test_control_characters_in_a_profile_do_not_reach_the_terminal(run_cli, tmp_path, argv):
    doc = json.loads(PROFILE.read_text())
    doc["hosts"][0]["hostname"] = EVIL
    doc["hosts"][0]["gpus"][0]["name"] = "GPU" + EVIL
    (tmp_path / "evil.json").write_text(json.dumps(doc))
    res = run_cli([a.replace("{p}", str(tmp_path / "evil.json")) for a in argv])
    assert res.status in (0, 1, 3), res.stderr
    for ch in ("\x1b", "\x07", "\x9b"):
        assert ch not in res.stdout
        assert ch not in res.stderr


def test_error_lines_drop_control_characters(run_cli, tmp_path):
    bad = tmp_path / "x\x1b]0;PWNED\x07.log"
    bad.mkdir()
    res = run_cli(["explain", str(bad)])
    assert res.status == 2
    assert "\x1b" not in res.stderr and "\x07" not in res.stderr
    assert len(res.stderr.strip().splitlines()) <= 2
