"""Fault injection: every probe fault ends within the timeout + 2 s, with the reason, and every
surviving rank reaches the same verdict.

Timeouts are 2-3 s so the suite stays fast. Rank 0 (or the rank under test) runs in this
process, where torch is already loaded, so the measured time is the probe's own - the bound the
docs promise (docs/probe.md "Deadlines"); other ranks are plain processes (the srun shape) that
load torch first and start the probe when told.
"""

from __future__ import annotations

import io
import json
import signal
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from probe_helpers import JOB_VARS, RankProcess, base_env, black_hole, free_port, wait_for_port

import rankmap
from rankmap.cli import main
from rankmap.cli.context import AppContext
from rankmap.errors import ProbeTimeout, UnavailableError

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("need_torch")]

T = 2.0
BOUND = T + 2.0
MACHINE = "workstation-4gpu"


@pytest.fixture
def rank_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., dict[str, str]]]:
    """Set this process's job environment (verify() reads os.environ); returns it."""
    import torch.distributed  # noqa: F401 - loaded before any clock starts

    def set_env(**values: str) -> dict[str, str]:
        for name in JOB_VARS:
            monkeypatch.delenv(name, raising=False)
        for name in ("RANKMAP_STORE_PORT", "RANKMAP_STORE_ADDR", "RANKMAP_STORE_FILE"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("RANKMAP_MACHINE", MACHINE)
        monkeypatch.setenv("TORCH_CPP_LOG_LEVEL", "FATAL")
        for name, value in values.items():
            monkeypatch.setenv(name, value)
        import os

        return dict(os.environ)

    yield set_env


@dataclass
class StoreJob:
    """One job's rankmap store on a free port (RANKMAP_STORE_PORT: rank 0 hosts it) and run id."""

    port: int
    run_id: str

    def env(self, rank: int, world: int) -> dict[str, str]:
        """A rank's job variables (for rank_env, or base_env of a RankProcess)."""
        return {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(world),
            "RANKMAP_STORE_PORT": str(self.port),
            "RANKMAP_STORE_ADDR": "127.0.0.1",
            "TORCHELASTIC_RUN_ID": self.run_id,
            "RANKMAP_MACHINE": MACHINE,
            "TORCH_CPP_LOG_LEVEL": "FATAL",
        }


@pytest.fixture
def store_job() -> StoreJob:
    return StoreJob(free_port(), f"faults-{uuid.uuid4().hex[:8]}")


def agent_client_env(port: int) -> dict[str, str]:
    return {
        "RANK": "1",
        "WORLD_SIZE": "2",
        "LOCAL_RANK": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
        "TORCHELASTIC_USE_AGENT_STORE": "True",
    }


def timed(fn: Callable[[], object]) -> tuple[object, float]:
    start = time.monotonic()
    try:
        value: object = fn()
    except rankmap.RankMapError as exc:
        value = exc
    return value, time.monotonic() - start


def cli_in_process(env: dict[str, str], timeout: float) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    ctx = AppContext(stdout=out, stderr=err, stdin=io.StringIO(), environ=env)
    status = main(["probe", "--timeout", f"{timeout:g}"], ctx)
    return status, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("fault", ["black hole", "unreachable"])
def test_store_that_never_answers_or_is_not_there(rank_env, fault: str) -> None:  # type: ignore[no-untyped-def]
    with black_hole() if fault == "black hole" else _closed_port() as port:
        env = rank_env(**agent_client_env(port))
        raised, seconds = timed(lambda: rankmap.verify(timeout=T, strict=True))
        assert isinstance(raised, UnavailableError) and not isinstance(raised, ProbeTimeout)
        assert f"127.0.0.1:{port} unreachable" in raised.message
        assert seconds < BOUND, seconds
        # not strict: a warning and the RM061 report, as fast
        with pytest.warns(RuntimeWarning, match="could not check this job"):
            report, seconds = timed(lambda: rankmap.verify(timeout=T))
        assert [f.code for f in report.findings] == ["RM061"]  # type: ignore[attr-defined]
        assert seconds < BOUND, seconds
        (status, out, err), seconds = timed(lambda: cli_in_process(env, T))
        assert status == 3 and f"127.0.0.1:{port} unreachable" in err, (out, err)
        assert seconds < BOUND, seconds


class _closed_port:  # noqa: N801 - used like black_hole()
    def __enter__(self) -> int:
        return free_port()

    def __exit__(self, *exc: object) -> None:
        return None


def _rank0_host(tmp_path: Path, job: StoreJob, world: int, mode: str = "verify") -> RankProcess:
    """Rank 0 as a plain process hosting the probe's store (RANKMAP_STORE_PORT), started."""
    proc = RankProcess(mode, 30.0, base_env(**job.env(0, world)), tmp_path)
    proc.wait_ready()
    proc.go()
    wait_for_port(job.port)
    return proc


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
def test_store_host_dies_or_stops_mid_exchange(
    rank_env, store_job, tmp_path: Path, sig: int
) -> None:  # type: ignore[no-untyped-def]
    port = store_job.port
    host = _rank0_host(tmp_path, store_job, world=3)  # waits for a rank 2 that never comes
    try:
        rank_env(**store_job.env(1, 3))
        threading.Timer(0.7, host.signal, args=(sig,)).start()
        raised, seconds = timed(lambda: rankmap.verify(timeout=T + 1))
        assert isinstance(raised, ProbeTimeout), raised
        assert f"rankmap store 127.0.0.1:{port}" in raised.message
        assert "rank 0's verdict" in raised.message
        word = "lost" if sig == signal.SIGKILL else "stopped answering"
        assert word in raised.message, raised.message
        assert seconds < T + 1 + 2.0, seconds
    finally:
        host.close()


def _peer(
    port: int, run_id: str, rank: int, own: bytes, call: int = 1
) -> Callable[[], bytes | None]:
    """A hand-written rank that stores ``own`` as its record (for the ``call``-th probe of rank
    0's process: keys ``call<N>``) and reads the verdict back, as a peer of rank 0's rankmap
    store would."""
    from rankmap.adapters import store_client

    box: dict[str, bytes | None] = {}

    def work() -> None:
        now = time.monotonic()
        store = store_client.connect("127.0.0.1", port, now + 20, now + 30)
        prefix = f"rankmap/{run_id}/0/call{call}"
        store.set(f"{prefix}/rec/{rank}", own)
        store.add(f"{prefix}/arrived", 1)
        while not store.check([f"{prefix}/verdict"]):
            time.sleep(0.02)
        box["verdict"] = store.get(f"{prefix}/verdict")
        store.add(f"{prefix}/read", 1)
        store.close()

    thread = threading.Thread(target=work, daemon=True)
    thread.start()

    def verdict() -> bytes | None:
        thread.join(20)
        return box.get("verdict")

    return verdict


@pytest.mark.parametrize(
    "own",
    [
        b'["rankmap-own/1","\xff\xfe not utf-8',
        b'{"rank": 1, "world_size": 2}',
        b'["rankmap-own/1","0123456789abcdef",1,null]',
        b"[" * 100_000,
        b'["rankmap-own/1","0123456789abcdef",' + b"9" * 5000 + b"]",
        b'["rankmap-own/1","' + b"x" * (3 * 2**20) + b'"]',  # the store keeps 1 MiB + 1
    ],
    ids=["bad-utf8", "not-this-format", "unknown-node-part", "deep", "huge-int", "over-limit"],
)
def test_corrupt_record_is_a_finding_and_every_rank_agrees(rank_env, store_job, own: bytes) -> None:  # type: ignore[no-untyped-def]
    rank_env(**store_job.env(0, 2))
    peer_verdict = _peer(store_job.port, store_job.run_id, 1, own)
    report, seconds = timed(lambda: rankmap.verify(timeout=T + 4))  # rank 0 hosts the store
    assert not isinstance(report, Exception), report
    unreadable = [f for f in report.findings if f.code == "RM063"]  # type: ignore[attr-defined]
    assert len(unreadable) == 1 and unreadable[0].ranks == (1,)
    assert report.sections["missing_ranks"] == []  # type: ignore[attr-defined]
    by_rank = {p.rank: p for p in report.placements}  # type: ignore[attr-defined]
    assert by_rank[1].error == "unreadable probe record"
    verdict = peer_verdict()
    assert verdict is not None
    theirs = json.loads(verdict)
    assert sorted(f["code"] for f in theirs["findings"]) == sorted(f.code for f in report.findings)  # type: ignore[attr-defined]
    assert seconds < T + 4, seconds  # every rank arrived: no waiting for the deadline


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["killed", "stopped"])
@pytest.mark.parametrize("rank0", ["verify", "cli"])
def test_killed_or_stopped_rank_every_survivor_says_the_same(
    rank_env, store_job, tmp_path: Path, sig: int, rank0: str
) -> None:  # type: ignore[no-untyped-def]
    others = [RankProcess("verify", T, base_env(**store_job.env(r, 3)), tmp_path) for r in (1, 2)]
    try:
        for p in others:
            p.wait_ready()
        others[1].signal(sig)  # rank 2 dies (or stops) before it publishes
        others[0].go()
        env = rank_env(**store_job.env(0, 3))
        if rank0 == "verify":
            raised, seconds = timed(lambda: rankmap.verify(timeout=T))
            assert isinstance(raised, ProbeTimeout), raised
            assert "rank 2 never reported within 2 s" in raised.message
        else:
            (status, out, _), seconds = timed(lambda: cli_in_process(env, T))
            assert status == 3 and "rank 2 never reported within 2 s" in out
        assert seconds < BOUND, seconds
        theirs = others[0].result()
        assert theirs["raised"] == "ProbeTimeout"
        assert "rank 2 never reported within 2 s" in str(theirs["message"])
        assert float(str(theirs["seconds"])) < BOUND + 1.0  # it started up to ~1 s earlier
    finally:
        for p in others:
            p.close()


def test_timeout_must_be_a_sane_number(rank_env) -> None:  # type: ignore[no-untyped-def]
    rank_env(RANK="1", WORLD_SIZE="2")
    for bad in (float("nan"), float("inf"), -1.0, 0.0, 1e9, True, "3"):
        with pytest.raises(rankmap.errors.InputError, match="timeout must be"):
            rankmap.verify(timeout=bad)  # type: ignore[arg-type]


def test_socket_module_still_works_after_a_stalled_connect(rank_env) -> None:  # type: ignore[no-untyped-def]
    """The abandoned connect thread ends once the black hole closes (nothing left blocked)."""
    with black_hole() as port:
        rank_env(**agent_client_env(port))
        with pytest.warns(RuntimeWarning):
            rankmap.verify(timeout=1.0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if not [t for t in threading.enumerate() if t.name == "rankmap-probe-store"]:
            break
        time.sleep(0.1)
    assert not [t for t in threading.enumerate() if t.name == "rankmap-probe-store"]
    with socket.socket() as s:  # sanity: this process can still open sockets
        s.bind(("127.0.0.1", 0))


def test_rank0_internal_error_is_one_verdict_for_every_rank(
    rank_env, store_job, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    import rankmap.probe as probe

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("planted collation bug")

    monkeypatch.setattr(probe, "collate_raw", broken)
    port, run_id = store_job.port, store_job.run_id
    env = rank_env(**store_job.env(0, 2))
    peer_verdict = _peer(port, run_id, 1, b"[]")
    with pytest.warns(RuntimeWarning, match="planted collation bug"):
        report = rankmap.verify(timeout=T + 4)
    assert [f.code for f in report.findings] == ["RM061"]
    verdict = peer_verdict()
    assert verdict is not None
    theirs = json.loads(verdict)
    assert [f["code"] for f in theirs["findings"]] == ["RM061"]
    assert "planted collation bug" in theirs["findings"][0]["title"]
    # the CLI: exit 3 with the reason (a second call: its own keys, call2)
    peer_verdict = _peer(port, run_id, 1, b"[]", call=2)
    status, out, _ = cli_in_process(env, T + 4)
    assert status == 3 and "planted collation bug" in " ".join(out.split())
    assert peer_verdict() is not None
