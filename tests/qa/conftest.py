"""QA helpers: run ``python -m rankmap`` as a real subprocess with this worktree's sources."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from qa_helpers import subprocess_env

RunProc = Callable[..., "subprocess.CompletedProcess[str]"]


@pytest.fixture
def run_proc(tmp_path: Path) -> RunProc:
    """``run_proc(["check", ...], env={...}, **popen_kwargs)``: a real ``python -m rankmap``."""

    def _run(
        argv: list[str], *, env: Mapping[str, str] | None = None, timeout: float = 60, **kw: Any
    ) -> subprocess.CompletedProcess[str]:
        full_env = {**subprocess_env(), **(env or {})}
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
