"""Run a launch command with NCCL debug output, stream it, and keep a bounded copy.

The job runs in its own process group (new session); SIGINT / SIGTERM / SIGHUP received by
rankmap are forwarded to the whole group (a second Ctrl-C sends SIGTERM, a third SIGKILL). The job's stdout and stderr go to our stdout and
stderr chunk by chunk, unchanged and in order per stream, while ``output.log`` in the run
directory receives both (arrival order), bounded: the first ``head`` bytes and the last ``tail``
bytes are kept, with a marker saying how much was dropped in between.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from rankmap.errors import InputError, UsageError

Sink = Callable[[bytes], None]

# Defaults added to the job's environment unless the user set the variable (docs/run.md).
# NCCL (reference/nccl.md (f)): INFO level, the INIT and ENV subsystems (rank -> cudaDev ->
# busId lines and the NCCL_* values NCCL read), one debug file per process (%h host, %p pid).
# PyTorch (reference/pytorch_nccl.md §5): flight-recorder dump into the run directory when a
# collective times out, and TORCH_DISTRIBUTED_DEBUG=INFO. PYTHONUNBUFFERED keeps the
# interleaving of a Python job's output live through our pipes.
NCCL_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("NCCL_DEBUG", "INFO"),
    ("NCCL_DEBUG_SUBSYS", "INIT,ENV"),
    ("NCCL_DEBUG_FILE", "{run_dir}/nccl.%h.%p.log"),
)
TORCH_DEFAULTS: tuple[tuple[str, str], ...] = (
    ("TORCH_NCCL_TRACE_BUFFER_SIZE", "2000"),
    ("TORCH_NCCL_DUMP_ON_TIMEOUT", "1"),
    ("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", "{run_dir}/nccl_trace_rank_"),
    ("TORCH_DISTRIBUTED_DEBUG", "INFO"),
    ("PYTHONUNBUFFERED", "1"),
)
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
# What the job's process group receives on the 1st, 2nd and 3rd (and later) Ctrl-C.
INTERRUPT_ESCALATION = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)
DEFAULT_HEAD_BYTES = 16 * 1024 * 1024
DEFAULT_TAIL_BYTES = 16 * 1024 * 1024
CHUNK = 65536
PENDING_LIMIT = 65536  # a line longer than this is redacted in pieces


def build_run_env(
    base: Mapping[str, str], overrides: Mapping[str, str], run_dir: Path
) -> tuple[dict[str, str], dict[str, str]]:
    """(job environment, the defaults rankmap added). User-set variables always win."""
    env = {**base, **overrides}
    added: dict[str, str] = {}
    for name, value in (*NCCL_DEFAULTS, *TORCH_DEFAULTS):
        if name not in env:
            added[name] = value.format(run_dir=run_dir)
    env.update(added)
    return env, added


def default_run_dir(cwd: Path, now: datetime | None = None) -> Path:
    """``<cwd>/rankmap-runs/<YYYYmmdd-HHMMSS>``, with ``-2``, ``-3``... when taken."""
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    base = cwd / "rankmap-runs" / stamp
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{stamp}-{n}")
    return path


def make_run_dir(path: Path) -> Path:
    """Create the run directory; ``InputError`` when impossible or not empty."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"--run-dir {str(path)!r}: cannot create: {exc.strerror}") from None
    if any(path.iterdir()):
        raise InputError(f"--run-dir {str(path)!r} is not empty; choose a new directory")
    return path


class BoundedCapture:
    """Thread-safe writer keeping the first ``head`` and the last ``tail`` bytes in a file."""

    def __init__(
        self,
        path: Path,
        head: int = DEFAULT_HEAD_BYTES,
        tail: int = DEFAULT_TAIL_BYTES,
        *,
        redact: Callable[[str], str] | None = None,
    ):
        self.path = path
        # Credentials the job prints never reach the run dir: complete lines go through
        # ``redact``; a partial line waits for its end (at most PENDING_LIMIT bytes).
        self._redact = redact
        self._pending = b""
        self._file: IO[bytes] = path.open("wb")
        self._head_left = head
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self._tail_limit = tail
        self.total = 0
        self.dropped = 0
        self._lock = threading.Lock()

    def write(self, data: bytes) -> None:
        """Record ``data`` (never blocks the stream beyond a file write)."""
        with self._lock:
            self.total += len(data)
            data = self._redacted_lines(data)
            self._keep(data)

    def _redacted_lines(self, data: bytes, *, final: bool = False) -> bytes:
        if self._redact is None:
            return data
        data = self._pending + data
        cut = len(data) if final or len(data) > PENDING_LIMIT else data.rfind(b"\n") + 1
        self._pending = data[cut:]
        if not cut:
            return b""
        text = data[:cut].decode("utf-8", errors="surrogateescape")
        return self._redact(text).encode("utf-8", errors="surrogateescape")

    def _keep(self, data: bytes) -> None:
        """Write into the head while it has room, else into the bounded tail (lock held)."""
        if self._head_left > 0:
            part = data[: self._head_left]
            self._file.write(part)
            self._head_left -= len(part)
            data = data[len(part) :]
        if not data:
            return
        self._tail.append(data)
        self._tail_bytes += len(data)
        while self._tail_bytes - len(self._tail[0]) >= self._tail_limit:
            old = self._tail.popleft()
            self._tail_bytes -= len(old)
            self.dropped += len(old)

    def close(self) -> None:
        """Write the kept tail (after a marker when bytes were dropped) and close the file."""
        with self._lock:
            self._keep(self._redacted_lines(b"", final=True))
            tail = b"".join(self._tail)
            excess = max(0, len(tail) - self._tail_limit)
            self.dropped += excess
            if self.dropped:
                note = f"\n[rankmap: {self.dropped} bytes of output not kept here]\n"
                self._file.write(note.encode())
            self._file.write(tail[excess:])
            self._file.close()

    @property
    def truncated(self) -> bool:
        return self.dropped > 0


@dataclass(frozen=True)
class JobResult:
    """How the job ended."""

    exit_code: int  # the job's code; 128 + N when killed by signal N
    signal: int | None
    seconds: float
    captured_bytes: int
    truncated: bool


def _pump(pipe: IO[bytes], sink: Sink, capture: BoundedCapture) -> None:
    fd = pipe.fileno()
    while True:
        try:
            data = os.read(fd, CHUNK)
        except OSError:
            break
        if not data:
            break
        capture.write(data)
        # our terminal went away: keep capturing, never block the job
        with contextlib.suppress(BrokenPipeError, ValueError):
            sink(data)
    pipe.close()


def _forward_signals(proc: subprocess.Popen[bytes]) -> dict[int, Any]:
    """Forward FORWARDED_SIGNALS to the job's process group; returns the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    interrupts = [0]

    def forward(signum: int, _frame: Any) -> None:
        if signum == signal.SIGINT:  # Ctrl-C again and again: SIGINT, SIGTERM, then SIGKILL
            interrupts[0] += 1
            signum = INTERRUPT_ESCALATION[min(interrupts[0], len(INTERRUPT_ESCALATION)) - 1]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signum)

    old = {}
    for sig in FORWARDED_SIGNALS:
        old[int(sig)] = signal.signal(sig, forward)
    return old


def run_job(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd: Path,
    capture: BoundedCapture,
    stdout: Sink,
    stderr: Sink,
) -> JobResult:
    """Start ``argv`` in a new process group, stream and capture its output, wait for it."""
    if not argv:
        raise UsageError("no launch command given after --")
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise UsageError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise UsageError(f"cannot execute {argv[0]}: permission denied") from None
    assert proc.stdout is not None and proc.stderr is not None
    old = _forward_signals(proc)
    pumps = [
        threading.Thread(target=_pump, args=(proc.stdout, stdout, capture), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, stderr, capture), daemon=True),
    ]
    try:
        for t in pumps:
            t.start()
        code = proc.wait()
        for t in pumps:  # a background grandchild may hold the pipes: do not wait forever
            t.join(timeout=5.0)
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
    capture.close()
    killed = -code if code < 0 else None
    return JobResult(
        exit_code=128 + killed if killed else code,
        signal=killed,
        seconds=time.monotonic() - start,
        captured_bytes=capture.total,
        truncated=capture.truncated,
    )


def captured_logs(run_dir: Path) -> list[Path]:
    """``output.log`` then the per-process NCCL debug files, for ``explain``."""
    out = [run_dir / "output.log"] if (run_dir / "output.log").exists() else []
    out += sorted(p for p in run_dir.glob("nccl.*.log") if p.is_file())
    return out
