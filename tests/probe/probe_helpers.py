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


def run_ranks(
    argv: list[str], envs: list[dict[str, str]], *, timeout: float, cwd: Path
) -> list[Run]:
    """One process per environment (each in its own session, killed at the end), all started
    before any is waited for - the ranks of one job; their runs in rank order."""
    procs = [
        subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
        for env in envs
    ]  # fmt: skip
    runs = []
    for proc in procs:
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            proc.kill()
        runs.append(Run(proc.returncode, out, err))
    return runs


_STARTUP: list[float] = []


def startup_seconds() -> float:
    """Wall seconds a fresh interpreter takes to import torch.distributed here, now (measured
    once per session): what a launched job spends before its first line, seconds on a loaded
    machine. Bounds on whole jobs scale with it instead of assuming an idle machine."""
    if not _STARTUP:
        import time

        start = time.monotonic()
        subprocess.run([sys.executable, "-c", "import torch.distributed"], check=False,
                       capture_output=True, timeout=600)  # fmt: skip
        _STARTUP.append(time.monotonic() - start)
    return _STARTUP[0]


def job_timeout(processes: int, work: float = 30.0) -> float:
    """How long a job of ``processes`` Python processes that each load torch may take: the
    ``work`` it does + every process's start-up, as if they loaded one after the other (a
    machine with few cores shared with other jobs)."""
    return work + processes * startup_seconds()


def torchrun(
    nproc: int,
    target: list[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    timeout: float | None = None,
) -> Run:
    """``torchrun --standalone``-like single-node run on a free port (by default given
    :func:`job_timeout` for the agent and its ``nproc`` workers)."""
    if timeout is None:
        timeout = job_timeout(nproc + 1, work=40.0)
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


RANK_SCRIPT = SCRIPTS / "rank.py"
JOB_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
            "TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RUN_ID", "GROUP_RANK", "NCCL_HOSTID")  # fmt: skip


@contextlib.contextmanager
def black_hole() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts every connection and never answers; closed at the end."""
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    server.settimeout(0.1)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in accepted:
            conn.close()  # the stalled client thread gets EOF and ends
        server.close()


class RankProcess:
    """tests/probe/scripts/rank.py in its own session: ``ready`` -> :meth:`go` -> one JSON line."""

    def __init__(self, mode: str, timeout: float, env: Mapping[str, str], cwd: Path) -> None:
        import queue
        import threading

        self.proc = subprocess.Popen(
            [sys.executable, str(RANK_SCRIPT), mode, str(timeout)],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        out = self.proc.stdout
        threading.Thread(target=lambda: [self.lines.put(x) for x in out], daemon=True).start()

    def wait_ready(self, timeout: float = 60.0) -> None:
        import queue

        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("rank process never became ready") from None
        assert line.strip() == "ready", line

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def result(self, timeout: float = 30.0) -> dict[str, object]:
        import queue

        last = ""
        try:
            while True:
                last = self.lines.get(timeout=timeout)
                if last.startswith('{"') and '"seconds"' in last:
                    return dict(json.loads(last))
        except queue.Empty:
            err = (
                self.proc.stderr.read() if self.proc.poll() is not None and self.proc.stderr else ""
            )
            raise AssertionError(
                f"no result from the rank process: {last!r} {err[-2000:]}"
            ) from None

    def signal(self, sig: int) -> None:
        os.killpg(self.proc.pid, sig)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGCONT)
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


def wait_for_port(port: int, timeout: float = 60.0) -> None:
    """Until something accepts connections on 127.0.0.1:port."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port}")
