"""One finding per root cause: too many processes for the visible GPUs fails one of two ways.

``set_device(LOCAL_RANK)`` fails with ``invalid device ordinal`` on the local ranks beyond the
visible GPUs; ``LOCAL_RANK % device_count`` (accelerate >= 0.33 does this itself) wraps them onto
GPUs already taken and NCCL stops with a duplicate GPU. The finding of the failure the script
produces names the other one, so fixing the symptom (adding or removing the wrap) is not mistaken
for fixing the cause.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from rankmap.findings import Finding
from rankmap.gpu_sharing import ORDINAL, duplicate_line, nccl_device
from rankmap.ranks import ranks_text

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome

TOO_MANY = frozenset({"RM101", "RM102", "RM201"})  # process count vs visible GPUs
# launcher issues whose processes collide or run out of GPUs: cause -> the codes they cause
CAUSES = {"RM904": frozenset({"RM101", "RM102"})}  # nested launchers multiply the processes
_COUNT_PREFIX = re.compile(r"^\d+ processes share \d+ GPU\(s\): ")


def wrapped_collision(failing: RankOutcome, outcomes: Sequence[RankOutcome]) -> str:
    """For an ordinal failure: the duplicate GPU the same launch gives once the index wraps."""
    n_vis = len(failing.view.devices)
    if not n_vis or failing.cuda_index is None:
        return ""
    target = failing.cuda_index % n_vis
    partner = next(
        (
            o
            for o in outcomes
            if o.proc.node == failing.proc.node
            and o.proc.world == failing.proc.world
            and o.error is None
            and o.cuda_index == target
        ),
        None,
    )
    if partner is None:
        return ""
    dev = partner.view.devices[target]
    line = duplicate_line(
        failing.proc.rank, partner.proc.rank, nccl_device(dev.pci_bus_id, dev.physical_uuid)
    )
    return (
        f" Wrapping the index instead (`LOCAL_RANK % torch.cuda.device_count()`, as accelerate "
        f">= 0.33 does) does not fix it: rank {failing.proc.rank} would share cuda:{target} with "
        f"rank {partner.proc.rank} and NCCL would stop with `{line}`."
    )


def unwrapped_ordinal(group: Sequence[RankOutcome], nproc_per_node: int) -> str:
    """For ranks wrapped onto one GPU: the ordinal failure without the wrap-around."""
    n_vis = len(group[0].view.devices)
    if not n_vis or nproc_per_node <= n_vis:
        return ""
    over = range(n_vis, nproc_per_node)
    return (
        f" Removing the wrap-around (`set_device(LOCAL_RANK)`) does not fix it: local ranks "
        f"{ranks_text(over)} would ask for cuda:{over[0]}"
        + (f"..cuda:{over[-1]}" if len(over) > 1 else "")
        + f" and fail with `{ORDINAL}`."
    )


def fold_into_cause(findings: list[Finding]) -> list[Finding]:
    """One finding per root cause: a launcher issue (:data:`CAUSES`, e.g. nested launchers)
    takes in the shared-GPU / ordinal findings it causes, their ranks, GPUs and NCCL line, and
    keeps its own fix (the consequence's fix would only treat the symptom)."""
    for cause, effects in CAUSES.items():
        head = next((f for f in findings if f.code == cause), None)
        folded = [f for f in findings if f.code in effects]
        if head is None or not folded:
            continue
        consequence = "; ".join(_COUNT_PREFIX.sub("", f.title) for f in folded)
        merged = replace(
            head,
            title=f"{head.title}: {consequence}",
            detail=" ".join([head.detail, *(f.detail for f in folded)]).strip(),
            ranks=tuple(sorted({r for f in (head, *folded) for r in f.ranks})),
            devices=tuple(dict.fromkeys(d for f in (head, *folded) for d in f.devices)),
            hosts=tuple(dict.fromkeys(h for f in (head, *folded) for h in f.hosts)),
            evidence=tuple(dict.fromkeys(e for f in (head, *folded) for e in f.evidence)),
        )
        findings = [merged if f is head else f for f in findings if f not in folded]
    return findings
