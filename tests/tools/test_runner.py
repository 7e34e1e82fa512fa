"""rankmap.adapters.runner with real subprocesses: env defaults, streaming order, bounded capture, signals."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from rankmap.adapters.runner import (
    BoundedCapture,
    build_run_env,
    captured_logs,
    default_run_dir,
    run_job,
)


def test_defaults_never_override_the_user(tmp_path: Path) -> None:
    env, added = build_run_env(
        {"NCCL_DEBUG": "WARN", "PATH": "/bin"}, {"NCCL_DEBUG_SUBSYS": "ALL"}, tmp_path
    )
    assert env["NCCL_DEBUG"] == "WARN" and env["NCCL_DEBUG_SUBSYS"] == "ALL"
    assert "NCCL_DEBUG" not in added and "NCCL_DEBUG_SUBSYS" not in added
    assert env["NCCL_DEBUG_FILE"] == f"{tmp_path}/nccl.%h.%p.log"
    assert env["TORCH_NCCL_DUMP_ON_TIMEOUT"] == "1"
    assert env["TORCH_DISTRIBUTED_DEBUG"] == "INFO"
    assert env["PATH"] == "/bin"
    fresh, added = build_run_env({}, {}, tmp_path)
    assert fresh["NCCL_DEBUG"] == "INFO" and fresh["NCCL_DEBUG_SUBSYS"] == "INIT,ENV"
    assert set(added) >= {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}


def test_default_run_dir_is_unique(tmp_path: Path) -> None:
    first = default_run_dir(tmp_path)
    assert first.parent == tmp_path / "rankmap-runs"
    first.mkdir(parents=True)
    second = default_run_dir(tmp_path)
    assert second != first and second.name.startswith(first.name)


def test_bounded_capture_keeps_head_and_tail(tmp_path: Path) -> None:
    cap = BoundedCapture(tmp_path / "out.log", head=10, tail=10)
    for i in range(100):
        cap.write(f"{i:03d}\n".encode())
    cap.close()
    data = (tmp_path / "out.log").read_bytes()
    assert data.startswith(b"000\n001\n00")
    assert data.endswith(b"98\n099\n")
    assert cap.truncated and cap.total == 400
    assert b"bytes of output not kept here" in data
    assert len(data) < 100


def _collect() -> tuple[list[bytes], object]:
    chunks: list[bytes] = []
    return chunks, chunks.append


def test_streams_in_order_and_returns_exit_code(
    tmp_path: Path, jobs: Path, sub_env: dict[str, str]
) -> None:
    out, out_sink = _collect()
    err, err_sink = _collect()
    cap = BoundedCapture(tmp_path / "output.log")
    result = run_job(
        [sys.executable, str(jobs / "job.py"), "7", "--lines", "200"],
        sub_env,
        cwd=tmp_path,
        capture=cap,
        stdout=out_sink,  # type: ignore[arg-type]
        stderr=err_sink,  # type: ignore[arg-type]
    )
    assert result.exit_code == 7 and result.signal is None
    assert b"".join(out).decode().splitlines() == [f"out {i}" for i in range(200)]
    assert b"".join(err).decode().splitlines() == [f"err {i}" for i in range(200)]
    captured = (tmp_path / "output.log").read_text().splitlines()
    assert sorted(captured) == sorted(
        [f"out {i}" for i in range(200)] + [f"err {i}" for i in range(200)]
    )
    assert [ln for ln in captured if ln.startswith("out")] == [f"out {i}" for i in range(200)]
    assert captured_logs(tmp_path) == [tmp_path / "output.log"]


def test_binary_output_passes_through_unchanged(tmp_path: Path, sub_env: dict[str, str]) -> None:
    out, sink = _collect()
    payload = bytes(range(256)) * 4
    code = f"import sys; sys.stdout.buffer.write({payload!r}); sys.stdout.flush()"
    run_job([sys.executable, "-c", code], sub_env, cwd=tmp_path,
            capture=BoundedCapture(tmp_path / "o.log"), stdout=sink, stderr=lambda b: None)  # type: ignore[arg-type]  # fmt: skip
    assert b"".join(out) == payload
    assert (tmp_path / "o.log").read_bytes() == payload


SIGNAL_JOB = r"""
import os, signal, subprocess, sys, time
marker = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", '''
import signal, sys, time
def h(s, f):
    open(sys.argv[1] + ".child", "w").write("child got %d" % s); sys.exit(0)
signal.signal(signal.SIGTERM, h)
signal.signal(signal.SIGINT, h)
print("child ready", flush=True)
time.sleep(60)
''', marker])
def h(s, f):
    open(marker, "w").write("parent got %d" % s)
    child.wait(); sys.exit(143)
signal.signal(signal.SIGTERM, h)
signal.signal(signal.SIGINT, h)
print("parent ready", flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_is_forwarded_to_the_whole_job(
    tmp_path: Path, sub_env: dict[str, str], sig: signal.Signals
) -> None:
    script = tmp_path / "sig_job.py"
    script.write_text(SIGNAL_JOB)
    marker = tmp_path / "marker"
    out: list[bytes] = []

    def sink(data: bytes) -> None:
        out.append(data)
        if b"child ready" in b"".join(out):
            threading.Timer(0.2, os.kill, (os.getpid(), sig)).start()

    start = time.monotonic()
    result = run_job([sys.executable, str(script), str(marker)], sub_env, cwd=tmp_path,
                     capture=BoundedCapture(tmp_path / "o.log"), stdout=sink, stderr=lambda b: None)  # fmt: skip
    assert time.monotonic() - start < 30
    assert result.exit_code == 143
    assert marker.read_text() == f"parent got {int(sig)}"
    assert Path(f"{marker}.child").read_text() == f"child got {int(sig)}"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_killed_job_exits_128_plus_signal(tmp_path: Path, sub_env: dict[str, str]) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    result = run_job([sys.executable, "-c", code], sub_env, cwd=tmp_path,
                     capture=BoundedCapture(tmp_path / "o.log"), stdout=lambda b: None, stderr=lambda b: None)  # fmt: skip
    assert result.signal == 9 and result.exit_code == 137


IGNORING_JOB = r"""
import signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("stubborn ready", flush=True)
time.sleep(60)
"""


def test_repeated_ctrl_c_escalates_to_sigkill(tmp_path: Path, sub_env: dict[str, str]) -> None:
    script = tmp_path / "stubborn.py"
    script.write_text(IGNORING_JOB)
    seen: list[bytes] = []

    def sink(data: bytes) -> None:
        seen.append(data)
        if b"stubborn ready" in data:
            for delay in (0.2, 0.5, 0.8):
                threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT)).start()

    start = time.monotonic()
    result = run_job([sys.executable, str(script)], sub_env, cwd=tmp_path,
                     capture=BoundedCapture(tmp_path / "o.log"), stdout=sink, stderr=lambda b: None)  # fmt: skip
    assert time.monotonic() - start < 30
    assert result.signal == signal.SIGKILL and result.exit_code == 137


def test_capture_redacts_lines_split_across_chunks(tmp_path: Path) -> None:
    from rankmap.redact import scrub

    capture = BoundedCapture(tmp_path / "out.log", redact=lambda text: scrub(text, {"s3cr3tv4lue"}))
    for chunk in (
        b"step 1 ok\nAuthorization: Bea",
        b"rer Zm9vYmFyYmF6cXV4\nval s3cr3",
        b"tv4lue\ntail",
    ):
        capture.write(chunk)
    capture.close()
    kept = (tmp_path / "out.log").read_text()
    assert "Zm9vYmFyYmF6cXV4" not in kept and "s3cr3tv4lue" not in kept
    assert kept == "step 1 ok\nAuthorization: Bearer <redacted>\nval <redacted>\ntail"
