"""NCCL's duplicate-GPU rule applied to a simulated launch, and the error lines it predicts.

Rule (reference/nccl.md (a)/(b)): two ranks of one communicator collide when they have the same
host hash (hostname + boot_id, or only ``NCCL_HOSTID``) and the same PCI bus id of their current
CUDA device (NCCL 2.5.6-2.29.7: ``Duplicate GPU detected : rank A and rank B both on CUDA device
<busid>``, A = the reporting rank, B = the lowest other rank) or the same GPU UUID (2.30:
``Multiple Ranks are using the same GPU/Partition...``, no identifiers).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rankmap.check.script_scan import DeviceSelection
from rankmap.gpu_sharing import (
    DUP_230,
    NCCL_FROM_230,
    NCCL_UNTIL_229,
    cuda_error_line,
    duplicate_lines,
    multi_rank_refused,
    nccl_device,
)
from rankmap.launchers import LaunchPlan

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome

MAX_PREDICTED = 256


def host_key(o: RankOutcome, plan: LaunchPlan, env: Mapping[str, str]) -> str:
    """The string NCCL hashes for "same host" for this rank (NCCL_HOSTID wins)."""
    hostid = o.proc.env.get("NCCL_HOSTID") or plan.node_env.get(o.proc.node, {}).get(
        "NCCL_HOSTID", env.get("NCCL_HOSTID")
    )
    if hostid:
        return f"NCCL_HOSTID={hostid}"
    return o.host.identity.nccl_host_hash_input() or o.host.hostname


def device_of(o: RankOutcome) -> tuple[str, str] | None:
    """(bus id or uuid, uuid) of the rank's current device; None when it fails before NCCL."""
    if o.error is not None or o.cuda_index is None:
        return None
    dev = o.view.devices[o.cuda_index]
    return (dev.pci_bus_id or dev.physical_uuid, dev.uuid)


def duplicate_groups(
    outcomes: list[RankOutcome], plan: LaunchPlan, env: Mapping[str, str]
) -> list[list[RankOutcome]]:
    """Groups of >= 2 ranks of one world on one NCCL host with the same bus id (rank order)."""
    groups: dict[tuple[int, str, str], list[RankOutcome]] = defaultdict(list)
    for o in outcomes:
        dev = device_of(o)
        if dev is not None:
            groups[(o.proc.world, host_key(o, plan, env), dev[0])].append(o)
    found = [sorted(g, key=lambda o: o.proc.rank) for g in groups.values() if len(g) > 1]
    return sorted(found, key=lambda g: (g[0].proc.world, g[0].proc.rank))


def arg_error_line(plan: LaunchPlan, sel: DeviceSelection) -> str | None:
    """argparse's error when the launcher appends a --local-rank spelling the script lacks."""
    arg = plan.local_rank_arg
    if arg and sel.hydra_entry:  # Hydra parses sys.argv itself and declares no local rank
        return f"error: unrecognized arguments: {arg}=0"
    if not arg or sel.tolerant_args or arg in sel.declared_args:
        return None
    if not sel.declared_args and not sel.strict_args:
        return None
    return f"error: unrecognized arguments: {arg}=0"


def predicted_errors(
    plan: LaunchPlan, outcomes: list[RankOutcome], env: Mapping[str, str], sel: DeviceSelection
) -> dict[str, Any]:
    """``predicted_errors`` (exact lines, unique, in rank order) and a per-rank breakdown."""
    lines: list[str] = []
    detail: list[dict[str, Any]] = []
    arg_line = arg_error_line(plan, sel)
    if arg_line is not None:  # every rank stops in parse_args, before any CUDA/NCCL call
        for o in outcomes:
            detail.append(
                {
                    "rank": o.proc.rank,
                    "node": o.host.hostname,
                    "line": arg_line.replace("=0", f"={o.proc.local_rank}"),
                    "source": "argparse",
                }
            )
        return {
            "predicted_errors": [arg_line],
            "predicted_errors_by_rank": detail[: MAX_PREDICTED * 4],
        }
    issue_lines = [line for i in plan.issues for line in i.predicted]
    for line in issue_lines:
        if line not in lines:
            lines.append(line)
    failed_worlds = set()
    for o in outcomes:
        if o.error is None:
            continue
        failed_worlds.add(o.proc.world)
        text = cuda_error_line(o.error)
        detail.append(
            {"rank": o.proc.rank, "node": o.host.hostname, "line": text, "source": "cuda"}
        )
        if text not in lines:
            lines.append(text)
    same_uuid = False
    for group in duplicate_groups(outcomes, plan, env):
        if group[0].proc.world in failed_worlds:
            continue  # a rank died before init_process_group: NCCL never gets to its check
        host_of = {o.proc.rank: o.host.hostname for o in group}
        dev = group[0].view.devices[group[0].cuda_index or 0]
        device = nccl_device(dev.pci_bus_id, dev.physical_uuid)
        for rank, text in duplicate_lines([o.proc.rank for o in group], device):
            detail.append(
                {"rank": rank, "node": host_of[rank], "line": text, "source": NCCL_UNTIL_229}
            )
            if len(lines) < MAX_PREDICTED:
                lines.append(text)
        if len({o.view.devices[o.cuda_index or 0].uuid for o in group}) < len(group):
            same_uuid = True
    if same_uuid and multi_rank_refused(env.get("NCCL_MULTI_RANK_GPU_ENABLE")):
        lines.append(DUP_230)
        detail.append({"rank": None, "node": None, "line": DUP_230, "source": NCCL_FROM_230})
    return {"predicted_errors": lines, "predicted_errors_by_rank": detail[: MAX_PREDICTED * 4]}
