"""Ranks that two processes claim, read from what frameworks print about their own ranks
(RM905 where NCCL's bootstrap said nothing): Lightning's per-process rank line, torchrun's agent
blocks and torch's store-based barrier.

A rank printed again after a failure is a restart, and the console of one node of several shows
only that node's ranks: neither is a claim of two processes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankmap.explain.collect import Evidence
from rankmap.explain.findings_map import quote
from rankmap.explain.patterns import Event
from rankmap.findings import Finding, finding

_FAILURE_KINDS = ("py_exception", "torchrun_root", "torchrun_failed", "torch_nccl_error", "oom")


def _announced_twice(ev: Evidence) -> list[Event]:
    """Framework lines that announce one global rank from two processes of one start (Lightning
    prints ``initializing ddp: GLOBAL_RANK: r, MEMBER: r+1/W`` once per process): a rank
    announced twice while other ranks of the world never appear. A rank announced again after a
    failure is a restart, and a log of one node of several shows only its own ranks once each."""
    evs = [e for e in ev.of("framework_rank") if e.line.lineno is not None]
    world = max((e.geti("world") or 0 for e in evs), default=0)
    ranks = [e.geti("rank") for e in evs]
    if not evs or len(set(ranks)) >= world or len(evs) > world:
        return []
    return _again(evs, ranks, _failure_lines(ev))


def _failure_lines(ev: Evidence) -> list[int]:
    return [e.line.lineno for e in ev.of(*_FAILURE_KINDS) if e.line.lineno is not None]


def _again(evs: list[Event], keys: Sequence[object], failed: list[int]) -> list[Event]:
    """The events whose key an earlier event already had, with no failure between the two (a
    restart prints its ranks again)."""
    twice: list[Event] = []
    last: dict[object, int] = {}
    for e, key in zip(evs, keys, strict=True):
        line = e.line.lineno or 0
        if key in last and not any(last[key] < f < line for f in failed):
            twice.append(e)
        last[key] = line  # after a failure, the restart's own announcement (review 25)
    return twice


def _agents_twice(ev: Evidence) -> list[Event]:
    """torchrun agents that give their workers the same global ranks (``global_ranks=[0, 1]``
    in two agent blocks of one round): two nodes that took the same node rank. Each block's
    ``restart_count=`` (the round: a restart after a failure or a node joining) is part of the
    key (review 25)."""
    evs: list[Event] = []
    keys: list[object] = []
    round_of: dict[str | None, str] = {}  # the latest restart_count per host
    for e in sorted(ev.of("agent_ranks"), key=lambda x: x.line.lineno or 0):
        if e.get("key") == "restart_count":
            round_of[e.host] = e.get("list") or ""
        elif e.get("key") == "global_ranks" and e.line.lineno is not None:
            evs.append(e)
            ranks = tuple((e.get("list") or "").replace(" ", "").split(","))
            keys.append((round_of.get(e.host, ""), ranks))
    return _again(evs, keys, _failure_lines(ev))


def _barrier_overfull(ev: Evidence) -> list[Event]:
    """torch's store-based barrier counted more processes than the world size: processes of
    two launches joined one store under the same ranks."""
    return [
        e for e in ev.of("barrier_count") if (e.geti("count") or 0) > (e.geti("world") or 0) > 0
    ]


_RM905_DETAIL = (
    "The processes number their ranks alike: {how}. On several machines, the same --node_rank / "
    "NODE_RANK on two of them (a script copied unchanged, or a scheduler that was not told the "
    "number of nodes) does it; otherwise two independent launches, or RANK / WORLD_SIZE exported "
    "for every process. What would decide: `echo $NODE_RANK $RANK` and the --node_rank / "
    "num_nodes each host passed."
)


def claimed_twice(ev: Evidence) -> list[Finding]:
    """RM905 from NCCL's Init lines of one rank on two hosts, or a framework's own rank lines,
    where NCCL's bootstrap said nothing."""
    nccl = ev.rankmap.claimed_twice
    if nccl:
        hosts = sorted({h for a, b in nccl for h in (a.host, b.host) if h})
        how = f"NCCL initialised the same ranks of one communicator on {' and '.join(hosts[:3])}"
        evidence = [e for a, b in nccl[:2] for e in (a.evidence, b.evidence)][:4]
        return [_rm905(how, sorted({a.rank for a, _ in nccl}), evidence, "error", hosts)]
    # a logger that writes every line twice (two handlers) repeats the announcements too: the
    # framework's own lines make a warning; the store's count of workers, an error (review 25)
    if twice := _announced_twice(ev):
        how = (
            "the framework announced the same global rank from two processes while other ranks "
            "of the world never appeared"
        )
        ranks = sorted({r for e in twice if (r := e.geti("rank")) is not None})
        return [_rm905(how, ranks, [quote(e) for e in twice[:3]], "warning", note=_LOGGED_TWICE)]
    if agents := _agents_twice(ev):
        how = "two torchrun agents gave their workers the same global ranks"
        ranks = sorted({int(r) for e in agents for r in (e.get("list") or "").split(",")})
        return [_rm905(how, ranks, [quote(e) for e in agents[:3]], "warning", note=_LOGGED_TWICE)]
    if overfull := _barrier_overfull(ev):
        how = "torch's store-based barrier counted more processes than the world size"
        return [_rm905(how, [], [quote(e) for e in overfull[:3]], "error")]
    return []


def _rm905(
    how: str,
    ranks: list[int],
    evidence: list[str],
    severity: str,
    hosts: Sequence[str] = (),
    note: str = "",
) -> Finding:
    return finding(
        "RM905",
        "Two processes claim the same global rank",
        ranks=ranks,
        hosts=list(hosts),
        detail=_RM905_DETAIL.format(how=how) + note,
        evidence=evidence,
        severity=severity,
    )


_LOGGED_TWICE = (
    " (A logger that writes every line twice repeats these lines too: if every other line of the "
    "log is doubled as well, this is that.)"
)
