"""Fault injection around the store's host and rank 0's start (real processes, real torchrun).

- the torchrun agent that hosts the c10d store is killed while its ranks wait in the probe:
  every surviving rank ends within T + 2 s, exit 3, naming the lost store;
- rank 0 starts late (a loaded machine: torch loads in seconds): the rank that started first
  gets rank 0's verdict instead of giving up, within a bound measured from rank 0's start.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from probe_helpers import SCRIPTS, RankProcess, base_env, free_port

import rankmap
from rankmap.errors import ProbeTimeout

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("need_torch")]

T = 2.0
BOUND = T + 2.0
CLI_RANK = SCRIPTS / "cli_rank.py"


def _wait_files(paths: list[Path], timeout: float) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if all(p.exists() for p in paths):
            return
        time.sleep(0.05)
    raise AssertionError(f"never appeared: {[p.name for p in paths if not p.exists()]}")


def _wait_arrivals(port: int, key: str, count: int) -> None:
    """Until ``count`` ranks have published (read from the job's store, as a peer would)."""
    from datetime import timedelta

    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", port, None, False, timeout=timedelta(seconds=30))
    end = time.monotonic() + 30
    while int(store.add(key, 0)) < count:
        assert time.monotonic() < end, "the ranks never published"
        time.sleep(0.05)
    del store


def test_killed_store_host_agent_every_waiting_rank_exits_3_in_time(tmp_path: Path) -> None:
    """torchrun's agent hosts the c10d store (TORCHELASTIC_USE_AGENT_STORE); its workers run in
    their own sessions and outlive it. They probe a world of 3 with 2 processes, so both wait
    for rank 2 when the agent is killed."""
    port = free_port()
    env = base_env(
        RMTEST_OUT=str(tmp_path),
        RMTEST_WORLD="3",
        RMTEST_TIMEOUT=f"{T:g}",
        RANKMAP_MACHINE="workstation-4gpu",
        TORCH_CPP_LOG_LEVEL="FATAL",
    )
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2",
            "--master-addr", "127.0.0.1", "--master-port", str(port), "--rdzv-id", "rmfault",
            str(CLI_RANK)]  # fmt: skip
    agent = subprocess.Popen(
        argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    started = [tmp_path / f"rank{r}.started" for r in (0, 1)]
    try:
        _wait_files(started, 120)
        _wait_arrivals(port, "rankmap/rmfault/0/call1/arrived", 2)  # both wait for rank 2 now
        agent.send_signal(signal.SIGKILL)  # the agent only: the store goes, the ranks stay
        agent.wait(10)
        _wait_files([tmp_path / f"rank{r}.json" for r in (0, 1)], 30)
    finally:
        for path in started:
            if path.exists():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(path.read_text() or "0"), signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(agent.pid, signal.SIGKILL)
    results = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in (0, 1)]
    reasons = set()
    for rank, res in enumerate(results):
        assert res["status"] == 3, (rank, res)
        assert f"127.0.0.1:{port}" in res["stderr"], (rank, res)
        assert "Traceback" not in res["stderr"] + res["stdout"]
        assert res["seconds"] < BOUND, (rank, res)
        reasons.add("lost" if "lost" in res["stderr"] else res["stderr"])
    assert reasons == {"lost"}, results  # the same verdict on every surviving rank


def test_late_rank0_still_gives_its_verdict_to_the_rank_that_started_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 1 starts 1.5 s before rank 0 (more than the 1 s slack a fixed allowance gave):
    it waits for rank 0's verdict - rank 2 is missing - and gets it, in T + 2 s + the skew."""
    import torch.distributed  # noqa: F401 - loaded before any clock starts

    # rank 1's connect retries last its own T; rank 0 must host the store before that runs
    # out, so T leaves the skew 2.5 s of margin on a loaded machine (T = 2 left 0.5 s)
    port, skew, late_t = free_port(), 1.5, 4.0
    common = {
        "WORLD_SIZE": "3",
        "RANKMAP_STORE_PORT": str(port),
        "RANKMAP_STORE_ADDR": "127.0.0.1",
        "TORCHELASTIC_RUN_ID": f"late-{port}",
        "RANKMAP_MACHINE": "workstation-4gpu",
        "TORCH_CPP_LOG_LEVEL": "FATAL",
    }
    for name in ("RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in {**common, "RANK": "0", "LOCAL_RANK": "0"}.items():
        monkeypatch.setenv(name, value)
    first = RankProcess("verify", late_t, base_env(RANK="1", LOCAL_RANK="1", **common), tmp_path)
    try:
        first.wait_ready()
        # rank 0 hosts the store here, so rank 1 must find it: it connects with retries until
        # its own deadline (connect is part of T) - a skew below T
        first.go()
        time.sleep(skew)
        start = time.monotonic()
        try:
            rankmap.verify(timeout=late_t)
            raise AssertionError("rank 0 should report rank 2 missing")
        except ProbeTimeout as exc:
            assert "rank 2 never reported within 4 s" in exc.message
        assert time.monotonic() - start < late_t + 2.0
        theirs = first.result()
    finally:
        first.close()
    assert theirs["raised"] == "ProbeTimeout", theirs
    assert "rank 2 never reported within 4 s" in str(theirs["message"]), theirs
    assert float(str(theirs["seconds"])) < late_t + 2.0 + skew
