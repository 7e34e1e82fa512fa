"""Helpers for the probe tests: free ports, real torchrun runs in their own process group."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import rankmap

SRC = Path(rankmap.__file__).resolve().parents[1]
SCRIPTS = Path(__file__).parent / "scripts"
JOB = SCRIPTS / "job.py"


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def base_env(**extra: str) -> dict[str, str]:
    """The environment of a launched job: this rankmap on PYTHONPATH, no inherited job vars."""
    drop = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "NCCL_HOSTID")
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("RANKMAP_")}
    env["PYTHONPATH"] = str(SRC) + os.pathsep + env.get("PYTHONPATH", "")
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


@dataclass
class Run:
    status: int
    stdout: str
    stderr: str


def run_group(argv: list[str], env: Mapping[str, str], *, timeout: float, cwd: Path) -> Run:
    """Run a command in its own session; the whole process group dies on timeout or error."""
    proc = subprocess.Popen(
        argv,
        env=dict(env),
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"{argv} did not finish in {timeout} s\n{out}\n{err}") from None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # stragglers of this group only
    return Run(proc.returncode, out, err)


def torchrun(
    nproc: int, target: list[str], env: Mapping[str, str], *, cwd: Path, timeout: float = 60.0
) -> Run:
    """``torchrun --standalone``-like single-node run on a free port."""
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc-per-node",
        str(nproc),
        "--master-addr",
        "127.0.0.1",
        "--master-port",
        str(free_port()),
        *target,
    ]
    return run_group(argv, env, timeout=timeout, cwd=cwd)


def rank_results(out_dir: Path) -> dict[int, dict[str, object]]:
    """rank -> what job.py recorded."""
    return {int(p.stem[4:]): json.loads(p.read_text()) for p in sorted(out_dir.glob("rank*.json"))}


@pytest.fixture
def need_torch() -> Iterator[None]:
    pytest.importorskip("torch")
    yield
