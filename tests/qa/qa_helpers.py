"""Assertions shared by the QA tests."""

from __future__ import annotations

import os
from pathlib import Path

import rankmap

SRC = str(Path(rankmap.__file__).resolve().parents[1])


def subprocess_env() -> dict[str, str]:
    """Environment for a ``python -m rankmap`` child: PATH and this worktree's sources only."""
    return {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC}


def assert_one_line_error(status: int, stderr: str, expected: int = 2) -> None:
    """Exit ``expected`` with ``rankmap: error: ...`` (plus an optional hint), no traceback."""
    assert status == expected, stderr
    assert "Traceback" not in stderr
    assert "internal error" not in stderr, stderr
    lines = stderr.strip().splitlines()
    assert lines and lines[0].startswith("rankmap: error: "), stderr
    assert len(lines) <= 2, stderr
