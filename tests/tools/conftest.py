"""Fixtures of the run / bench / topo / html tests: subprocess environment and job scripts."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import rankmap

SRC = Path(rankmap.__file__).parents[1]
JOBS = Path(__file__).parent.parent / "data" / "tools"


@pytest.fixture
def sub_env() -> dict[str, str]:
    """Environment for subprocesses: this worktree's src on PYTHONPATH, no NCCL/torch debug vars."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NCCL_", "TORCH_NCCL_", "TORCH_DISTRIBUTED", "RANK", "LOCAL_RANK"))
        and k not in ("WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "PYTHONUNBUFFERED")
    }
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.fixture
def python() -> str:
    return sys.executable


@pytest.fixture
def jobs() -> Path:
    """tests/data/tools: job scripts and nvidia-smi topo -m samples."""
    return JOBS
