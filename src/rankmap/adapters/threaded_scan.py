"""Segments of a huge file scanned by threads, their candidate lines yielded in file order.

For a matcher that releases the GIL while it scans (hyperscan): the threads share the compiled
database (each its own scratch space), read and scan their segments, and hand back the few
candidate lines of each; the caller's thread turns them into lines in file order. At most
``workers + 1`` segments are scanned and not yet consumed: memory stays bounded however many
lines match.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from queue import SimpleQueue
from typing import Any, TypeVar

T = TypeVar("T")
Job = tuple[str, int, int]


def lines_threaded(
    matcher: Any,
    jobs: list[Job],
    workers: int,
    scan: Callable[[Any, str, int, int], list[bytes]],
    to_lines: Callable[[list[bytes], str], Iterator[T]],
) -> Iterator[T]:
    """``to_lines(scan(m, *job), path)`` for every job, in order; ``m`` is
    ``matcher.for_thread()`` of the thread that scans it."""
    done = threading.Condition()
    results: dict[int, list[bytes] | BaseException] = {}
    room = threading.Semaphore(workers + 1)  # segments taken and not yet consumed (held)
    todo: SimpleQueue[int | None] = SimpleQueue()
    for i in range(len(jobs)):
        todo.put(i)
    stop = threading.Event()

    def work() -> None:
        mine = None
        while True:
            room.acquire()
            i = None if stop.is_set() else todo.get()
            if i is None:
                return
            try:
                mine = mine or matcher.for_thread()
                part: list[bytes] | BaseException = scan(mine, *jobs[i])
            except BaseException as exc:  # noqa: BLE001 - handed to the consumer, raised there
                part = exc
            with done:
                results[i] = part
                done.notify_all()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(min(workers, len(jobs)))]
    for _ in threads:
        todo.put(None)
    return _consume(jobs, threads, done, results, room, stop, to_lines)


def _consume(
    jobs: list[Job],
    threads: list[threading.Thread],
    done: threading.Condition,
    results: dict[int, list[bytes] | BaseException],
    room: threading.Semaphore,
    stop: threading.Event,
    to_lines: Callable[[list[bytes], str], Iterator[T]],
) -> Iterator[T]:
    for t in threads:
        t.start()
    try:
        for i, (path, _, _) in enumerate(jobs):
            with done:
                while i not in results:
                    done.wait()
                part = results.pop(i)
            if isinstance(part, BaseException):
                raise part
            yield from to_lines(part, path)
            del part
            room.release()  # this segment's lines are gone: another may be scanned
    finally:
        stop.set()
        for _ in threads:
            room.release()  # a thread waiting for room wakes, sees the stop and ends
        for t in threads:
            t.join()
