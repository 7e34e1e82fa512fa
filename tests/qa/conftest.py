"""QA helpers: run ``python -m rankmap`` as a real subprocess with this worktree's sources."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

import rankmap

SRC = str(Path(rankmap.__file__).resolve().parents[1])

RunProc = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run_proc(tmp_path: Path) -> RunProc:
    """``run_proc(["check", ...], env={...}, **popen_kwargs)``: a real ``python -m rankmap``."""

    def _run(
        argv: list[str], *, env: Mapping[str, str] | None = None, timeout: float = 60, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        full_env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": SRC, **(env or {})}
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("capture_output", "stdout" not in kw)
        return subprocess.run(
            [sys.executable, "-m", "rankmap", *argv],
            env=full_env,
            cwd=tmp_path,
            text=True,
            timeout=timeout,
            **kw,
        )

    return _run
