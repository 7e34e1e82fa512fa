"""Streams: a reader that goes away (| head), stdin or stdout closed."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest
from qa_helpers import assert_one_line_error, subprocess_env

from rankmap.cli import main
from rankmap.cli.context import AppContext

OVERSUBSCRIBED = [
    "check",
    "--machine",
    "dgx-h100",
    "--",
    "torchrun",
    "--nproc-per-node",
    "16",
    "t.py",
]
CLEAN = ["doctor", "--machine", "dgx-h100"]


class _ClosedPipe(io.StringIO):
    """stdout whose reader has gone away: every write raises BrokenPipeError."""

    def write(self, s: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")


def _run_into_closed_pipe(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    ctx = AppContext(
        stdout=_ClosedPipe(), stderr=err, stdin=io.StringIO(""), environ={}, color=False, width=100
    )
    return main(argv, ctx), err.getvalue()


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
@pytest.mark.parametrize(("argv", "status"), [(OVERSUBSCRIBED, 1), (CLEAN, 0)], ids=["error", "ok"])
def test_broken_pipe_keeps_the_verdict_exit_status(argv, status, as_json):
    if as_json:
        argv = [argv[0], "--json", *argv[1:]]
    got, err = _run_into_closed_pipe(argv)  # must return, not raise SystemExit
    assert got == status
    assert err == ""


@pytest.mark.parametrize(("argv", "status"), [(OVERSUBSCRIBED, 1), (CLEAN, 0)], ids=["error", "ok"])
def test_broken_pipe_in_a_real_process(argv, status):
    proc = subprocess.Popen(
        [sys.executable, "-m", "rankmap", *argv],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # `| head -0`: the reader is gone before rankmap writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == status, err
    assert err == ""


def _env() -> dict[str, str]:
    return subprocess_env()


def test_closed_stdin_is_a_one_line_error(run_proc):
    res = run_proc(["explain"], stdin=None, timeout=60, preexec_fn=_close_fd(0))
    assert_one_line_error(res.returncode, res.stderr)
    assert "stdin" in res.stderr


def test_closed_stdout_is_a_one_line_error(run_proc):
    res = run_proc(CLEAN, stdout=None, stderr=subprocess.PIPE, preexec_fn=_close_fd(1))
    assert_one_line_error(res.returncode, res.stderr)
    assert "stdout" in res.stderr


def _close_fd(fd: int):  # type: ignore[no-untyped-def]
    import os

    return lambda: os.close(fd)


def test_piped_json_is_one_document(run_proc):
    res = run_proc(["check", "--json", *OVERSUBSCRIBED[1:]])
    assert res.returncode == 1
    assert json.loads(res.stdout)["verdict"] == "error"


def test_sigint_while_reading_is_one_line_and_130():
    import signal
    import time

    proc = subprocess.Popen(
        [sys.executable, "-m", "rankmap", "explain", "-"],
        env=_env(),
        stdin=subprocess.PIPE,  # never written, never closed: explain waits for the log
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(3)  # let it start and block on stdin (not a timing assertion)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert err.strip() == "rankmap: error: interrupted"
    assert out == ""
