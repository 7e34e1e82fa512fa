"""Accumulate events of one or more inputs into bounded evidence for the diagnosis."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from rankmap.explain.patterns import Event, recognise
from rankmap.explain.rankmap_builder import RankMap
from rankmap.explain.reader import Line
from rankmap.numbers import int_or_none

MAX_EVENTS_PER_KIND = 256


SIGTERM_EXIT = -15  # a worker's exitcode when a signal 15 ended it


@dataclass(frozen=True)
class Failure:
    """One entry of torchrun's failure summary (``Root Cause`` or ``Failures:``)."""

    rank: int | None
    local_rank: int | None
    host: str | None
    exitcode: int | None
    root: bool
    evidence: str


@dataclass
class Evidence:
    """Everything recognised, capped per kind; counts are exact."""

    events: dict[str, list[Event]] = field(default_factory=lambda: defaultdict(list))
    counts: Counter[str] = field(default_factory=Counter)
    rankmap: RankMap = field(default_factory=RankMap)
    failures: list[Failure] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    lines_seen: int = 0
    _pending: dict[str, str] = field(default_factory=dict)
    _root_next: bool = False

    def add_lines(self, lines: Iterable[Line]) -> None:
        """Recognise and keep the events of ``lines``."""
        for line in lines:
            self.lines_seen += 1
            for ev in recognise(line):
                self.add(ev)
        self._flush_failure()

    def add(self, ev: Event) -> None:
        """Keep one event."""
        self.counts[ev.kind] += 1
        if ev.kind in ("init", "tests_device"):
            self.rankmap.add(ev)
        if ev.kind == "torchrun_root":
            self._flush_failure()
            self._root_next = True
        elif ev.kind == "torchrun_field":
            self._failure_field(ev)
        elif ev.kind == "torchrun_failed" and len(self.failures) < MAX_EVENTS_PER_KIND:
            self.failures.append(
                Failure(
                    rank=None,
                    local_rank=ev.geti("local"),
                    host=ev.host,
                    exitcode=ev.geti("code"),
                    root=False,
                    evidence=f"{ev.line.where()}: {ev.line.text.strip()[:300]}",
                )
            )
        bucket = self.events[ev.kind]
        if len(bucket) < MAX_EVENTS_PER_KIND:
            bucket.append(ev)

    def of(self, *kinds: str) -> list[Event]:
        """Kept events of the given kinds, in input order per kind."""
        out: list[Event] = []
        for k in kinds:
            out.extend(self.events.get(k, ()))
        return out

    def failed_ranks(self) -> list[int]:
        """Ranks of torchrun's failure summary, in order. torchrun stops the other workers with
        SIGTERM once one fails ("Sending process N closing signal SIGTERM",
        torch/distributed/elastic/multiprocessing/api.py): their exitcode -15 is the aftermath,
        named only when no worker failed by itself."""
        failed = [f for f in self.failures if f.rank is not None]
        failed = [f for f in failed if f.exitcode != SIGTERM_EXIT] or failed
        return list(dict.fromkeys(f.rank for f in failed if f.rank is not None))

    def has(self, *kinds: str) -> bool:
        """Whether any event of these kinds was seen."""
        return any(self.counts.get(k) for k in kinds)

    def _failure_field(self, ev: Event) -> None:
        key = ev.get("key") or ""
        if key == "time" or key in self._pending:
            self._flush_failure()
        if key == "rank":
            self._pending["rank"] = ev.get("rank") or ""
            self._pending["local_rank"] = ev.get("local_rank") or ""
            self._pending["evidence"] = f"{ev.line.where()}: {ev.line.text.strip()}"
        elif key == "exitcode":
            self._pending["exitcode"] = ev.get("code") or ""
        elif key == "host":
            self._pending["host"] = ev.get("host") or ""
        else:
            self._pending[key] = ev.get("val") or ""

    def _flush_failure(self) -> None:
        p = self._pending
        if "rank" in p:

            def num(key: str) -> int | None:
                v = p.get(key, "")
                return int_or_none(v)

            self.failures.append(
                Failure(
                    rank=num("rank"),
                    local_rank=num("local_rank"),
                    host=p.get("host") or None,
                    exitcode=num("exitcode"),
                    root=self._root_next,
                    evidence=p.get("evidence", ""),
                )
            )
            self._root_next = False
        self._pending = {}

    def nccl_versions(self) -> dict[str, str]:
        """NCCL versions seen -> where (first evidence)."""
        out: dict[str, str] = {}
        for ev in self.of("nccl_version", "torch_nccl_error"):
            if ev.version and ev.version not in out:
                out[ev.version] = f"{ev.line.where()}: {ev.line.text.strip()[:200]}"
        return out

    def fingerprint(self) -> str | None:
        """NCCL release from the init.cc line of a duplicate-GPU WARN."""
        for ev in self.of("duplicate_gpu"):
            if ev.version:
                return ev.version
        return None
