"""One deadline over store calls that the store client cannot bound itself.

torch's TCPStore client has no read timeout while it connects: a port that accepts TCP but never
answers (a black hole: a wrong service, a stopped store host, a firewall that accepts) blocks
the constructor forever, and its connect retries run past the timeout it was given (1.5-2x on
an unreachable address). So the probe's store work runs in a daemon thread and the caller waits
for it only until the deadline: :func:`run_until` returns its result, re-raises its exception,
or raises :class:`Stalled` naming what the work was doing when time ran out. A stalled thread is
left behind (it cannot be cancelled); it ends when its socket does.
"""

from __future__ import annotations

import atexit
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass
class Progress:
    """What the store work is doing now (written by the worker, read when time runs out)."""

    phase: str = "connecting"
    where: str = "the store"
    connected: bool = False
    verdict_published: bool = False
    until: float | None = None  # set by the work: a later end for :func:`run_until` to wait for


THREAD_NAME = "rankmap-probe-store"


def stalled_threads() -> list[threading.Thread]:
    """Store work abandoned by :func:`run_until` that is still running."""
    return [t for t in threading.enumerate() if t.name == THREAD_NAME]


EXIT_WAIT_S = 3.0


def _join_stalled() -> None:
    """At interpreter exit: give abandoned store work a moment to end (a connect attempt ends
    within ~2 s; a black hole never does, and exiting with it blocked in a read is harmless),
    because exiting while a thread is inside torch's connect loop aborts the process (-6)."""
    end = time.monotonic() + EXIT_WAIT_S
    for thread in stalled_threads():
        thread.join(max(0.0, end - time.monotonic()))


_EXIT_HOOK: list[bool] = []


class Stalled(Exception):
    """The work did not finish by the deadline; ``progress`` says where it was."""

    def __init__(self, progress: Progress) -> None:
        super().__init__(progress.phase)
        self.progress = progress


def run_until(
    work: Callable[[Progress], T],
    until: float,
    progress: Progress,
    *,
    connect_by: float | None = None,
) -> T:
    """``work(progress)`` in a daemon thread, waited for until the monotonic time ``until``
    (and only until ``connect_by`` if ``progress.connected`` is still false then; or until
    ``progress.until`` where the connected work moved it later)."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = work(progress)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            box["error"] = exc
        finally:
            done.set()

    thread = threading.Thread(target=target, name=THREAD_NAME, daemon=True)
    thread.start()
    early = connect_by is not None and not done.wait(max(0.0, connect_by - time.monotonic()))
    finished = not (early and not progress.connected) and done.wait(
        max(0.0, until - time.monotonic())
    )
    while not finished and progress.connected and (progress.until or 0.0) > until:
        until = progress.until or until  # the work measured a later end (a late rank 0)
        finished = done.wait(max(0.0, until - time.monotonic()))
    if not finished:
        if not _EXIT_HOOK:
            atexit.register(_join_stalled)
            _EXIT_HOOK.append(True)
        raise Stalled(progress)
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
