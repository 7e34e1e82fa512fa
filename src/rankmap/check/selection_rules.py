"""Findings about the script's device selection itself: how sure the analysis is, and what the
placement costs when it is right (errors only on positive evidence, see docs/check.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rankmap.check.index_select import COMPUTED_BY_SCRIPT
from rankmap.check.script_ast import guard_holds
from rankmap.check.script_scan import DeviceSelection
from rankmap.findings import Finding, finding
from rankmap.launchers.task_shell import unread_wrapper
from rankmap.ranks import ranks_text

if TYPE_CHECKING:
    from rankmap.check.engine import RankOutcome

# Codes whose cause is the script's own choice (no/constant device): an error needs the evidence
# that the collision reaches NCCL (CUDA use and an NCCL backend in the files read).
_SCRIPT_CHOICE = ("RM301", "RM302")


def dup_severity(code: str, sel: DeviceSelection) -> str | None:
    """Severity of a duplicate-GPU finding given the evidence (None: no finding at all).

    NCCL's duplicate check (reference/nccl.md (a)) fires only in an NCCL communicator: with CUDA
    use and an NCCL (or the default) backend it is an error; with ``gloo``/``mpi``, or with no
    process group found while the script chose no/one device, the ranks only share a GPU
    (memory, speed): a warning. Without CUDA use nothing is said.
    """
    if sel.gpu_free or not sel.uses_cuda:
        return None
    if sel.kind == "assumed_local_rank" or sel.nccl_evidence:
        return "error"
    if sel.backend in ("gloo", "mpi"):
        return "warning"
    if code in _SCRIPT_CHOICE or sel.kind in ("none", "constant"):
        return "warning"
    return "error"


def selection_findings(
    sel: DeviceSelection, outcomes: list[RankOutcome], found: list[Finding]
) -> list[Finding]:
    """RM031 (no GPU use), RM030 (not followed / no branch applies), RM330 (tensor-only device)."""
    out: list[Finding] = _local_ranks_across_nodes(sel, outcomes)
    if sel.gpu_free:
        what = "not a PyTorch script" if sel.kind == "not_torch" else "CPU-only job"
        backend = f"backend {sel.backend}" if sel.backend else "no process group found"
        out.append(
            finding(
                "RM031",
                f"{sel.path or 'the script'}: {what} ({backend}, no CUDA use): no GPU placement "
                "to check",
                evidence=sel.evidence,
            )
        )
        return out
    out += _global_rank_across_nodes(sel, outcomes, found)
    out += _global_sink_across_nodes(sel, outcomes, [*found, *out])
    unsimulated = [o.proc.rank for o in outcomes if o.cuda_index is None and o.error is None]
    computed = [o for o in outcomes if o.reason.endswith(COMPUTED_BY_SCRIPT)]
    if computed:
        out.append(_computed_by_script(computed))
        unsimulated = [r for r in unsimulated if r not in {o.proc.rank for o in computed}]
    if sel.kind == "unknown" or sel.unresolved or unsimulated:
        out.append(_not_followed(sel, unsimulated))
    per_rank = sel.kind in ("local_rank", "local_rank_modulo", "global_rank", "accelerate")
    errors = any(f.severity.value == "error" for f in found)
    # only ranks whose own GPU is not cuda:0 open a context on another rank's GPU (review 30:
    # one process per node, its GPU cuda:0, was warned)
    off_zero = [o.proc.rank for o in outcomes if o.cuda_index not in (0, None)]
    # (a gloo job's collectives open no CUDA context: review 37)
    if per_rank and not sel.sets_current and not errors and off_zero and sel.backend != "gloo":
        out.append(
            finding(
                "RM330",
                f"each rank uses its own GPU through `{sel.call}` ({sel.where}), but never "
                "calls set_device: its current device stays cuda:0",
                detail="barrier(), object collectives and `.cuda()` without an index open a CUDA "
                "context on GPU 0 of every rank (reference/pytorch_nccl.md §1-2).",
                ranks=off_zero,
                fix="torch.cuda.set_device(local_rank)  # before init_process_group",
            )
        )
    return out


def _global_rank_across_nodes(
    sel: DeviceSelection, outcomes: list[RankOutcome], found: list[Finding]
) -> list[Finding]:
    """The global rank reaches the sink on a second node: its ranks take GPU ``rank``, not their
    local one, even where that ordinal exists (evidence enough for an error, docs/check.md)."""
    if (
        sel.kind != "global_rank"
        or sel.modulo
        or sel.modulus
        or any(f.code == "RM401" for f in found)
    ):
        return []
    off = [
        o
        for o in outcomes
        if o.error is None and o.cuda_index is not None and o.proc.rank != o.proc.local_rank
    ]
    if not off:
        return []
    first = off[0]
    return [
        finding(
            "RM401",
            f"the global rank is the device index on {len({o.proc.node for o in outcomes})} nodes: "
            f"ranks {ranks_text(o.proc.rank for o in off)} use cuda:RANK (rank {first.proc.rank} on "
            f"{first.host.hostname} takes cuda:{first.cuda_index}, its local rank is "
            f"{first.proc.local_rank})",
            detail=f"{sel.where}: `{sel.call}`; with more ranks per node the ordinal runs past the "
            "node's GPUs (invalid device ordinal).",
            ranks=[o.proc.rank for o in off],
            hosts=sorted({o.host.hostname for o in off}),
            fix="torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
        )
    ]


def _off_node(outcomes: list[RankOutcome]) -> list[RankOutcome]:
    """The simulated ranks whose global rank is not their local rank (nodes after the first)."""
    return [
        o
        for o in outcomes
        if o.error is None and o.cuda_index is not None and o.proc.rank != o.proc.local_rank
    ]


def _global_sink_across_nodes(
    sel: DeviceSelection, outcomes: list[RankOutcome], found: list[Finding]
) -> list[Finding]:
    """set_device picks the local GPU but a later sink (DDP ``device_ids``, ``device_id=``,
    ``.to(...)``) gets the global rank: right on one node, another GPU or an ordinal past the
    node's GPUs on the others (docs/check.md "Sinks that disagree")."""
    if sel.global_sink is None or any(f.code == "RM401" for f in found):
        return []
    off = _off_node(outcomes)
    if not off:
        return []
    where, text, kind = sel.global_sink
    n_vis = min(len(o.view.devices) for o in off)
    past = [o for o in off if o.proc.rank >= len(o.view.devices)]
    what = (
        f"ranks {ranks_text(o.proc.rank for o in past)} ask for "
        f"cuda:{past[0].proc.rank}..cuda:{past[-1].proc.rank}, past the {n_vis} GPU(s) a node "
        "has (invalid device ordinal)"
        if past
        else f"ranks {ranks_text(o.proc.rank for o in off)} name another rank's GPU"
    )
    fix = (
        "device_ids=[torch.cuda.current_device()]"
        if "device_ids" in text
        else "device_id=torch.device('cuda', torch.cuda.current_device())"
        if "device_id" in text
        else ".to(torch.device('cuda', torch.cuda.current_device()))"
    )
    return [
        finding(
            "RM401",
            f"`{text}` ({where}) is given the global rank, but set_device selects the local "
            f"GPU ({sel.where}): on {len({o.proc.node for o in outcomes})} nodes {what}",
            detail=f"The {'wrapper' if kind == 'wrapper' else 'sink'} at {where} must name the "
            f"device set_device chose; on one node the global rank is the local one, so the "
            "job only fails on the second node.",
            ranks=[o.proc.rank for o in off],
            hosts=sorted({o.host.hostname for o in off}),
            fix=f"{fix}  # at {where}: the device set_device chose",
            evidence=[f"{where}: `{text}`", f"{sel.where}: `{sel.call}`"],
        )
    ]


def _local_ranks_across_nodes(sel: DeviceSelection, outcomes: list[RankOutcome]) -> list[Finding]:
    """``init_process_group(rank=<local index>, ...)`` on more than one node: every node claims
    the global ranks 0..n-1."""
    if sel.local_init is None:
        return []
    outcomes = [o for o in outcomes if guard_holds(sel.local_init_needs, o.proc.env.get)]
    worlds: dict[int, set[int]] = {}
    for o in outcomes:
        worlds.setdefault(o.proc.world, set()).add(o.proc.node)
    if not any(len(nodes) > 1 for nodes in worlds.values()):
        return []
    where, _, text = sel.local_init.partition(": ")
    per_node = max(
        sum(1 for o in outcomes if o.proc.node == n) for n in {o.proc.node for o in outcomes}
    )
    n_nodes = max(len(nodes) for nodes in worlds.values())
    return [
        finding(
            "RM905",
            f"{text} ({where}) gives the ranks of each of the {n_nodes} nodes the global ranks "
            f"0-{per_node - 1}: the nodes claim the same ranks",
            detail="rank is the local index, so every node's processes take the same ranks. "
            "With world_size one node's count the rendezvous sees rank 0 once per node "
            f"(`rank 0 of {per_node} ranks has already checked in`, or a store that cannot "
            "bind), or each node runs its own job; with the job's world size the ranks from "
            f"{per_node} on never check in and the rendezvous waits until its timeout. "
            "Right on one node.",
            ranks=[o.proc.rank for o in outcomes if o.proc.rank != o.proc.local_rank],
            hosts=sorted({o.host.hostname for o in outcomes}),
            fix=_init_fix(outcomes[0]),
            evidence=[sel.local_init],
        )
    ]


# the launcher's global rank variable -> its world size variable (reference/launchers.md §9)
_WORLD_VARS = {
    "RANK": "WORLD_SIZE",
    "SLURM_PROCID": "SLURM_NTASKS",
    "OMPI_COMM_WORLD_RANK": "OMPI_COMM_WORLD_SIZE",
    "PMI_RANK": "PMI_SIZE",
}


def _init_fix(o: RankOutcome) -> str:
    """init_process_group with the global rank and world size this launcher sets."""
    rank = next((v for v in _WORLD_VARS if v in o.proc.env), "RANK")
    return (
        f'dist.init_process_group("nccl", rank=int(os.environ["{rank}"]), '
        f'world_size=int(os.environ["{_WORLD_VARS[rank]}"]))'
    )


def _computed_by_script(outcomes: list[RankOutcome]) -> Finding:
    """RM030 for processes whose visible-devices list the launch script computes where rankmap
    cannot (a variable set in an ``if``, a bash array)."""
    what = outcomes[0].reason.removesuffix(COMPUTED_BY_SCRIPT).strip()
    ranks = ranks_text(o.proc.rank for o in outcomes)
    wrapper = unread_wrapper(what)
    if wrapper:
        return finding(
            "RM030",
            f"each task runs {wrapper} before python and rankmap could not read it: "
            f"it may set CUDA_VISIBLE_DEVICES, so the GPUs of ranks {ranks} are not simulated",
            detail="Pass the wrapper's path as it is on this machine, pass the value with --env, "
            "or check the map under `rankmap run`.",
        )
    return finding(
        "RM030",
        f"{what} is computed by the launch script where rankmap cannot follow it: the GPUs of "
        f"ranks {ranks} are not simulated",
        detail="Pass the value with --env, or check the map under `rankmap run`.",
    )


def _not_followed(sel: DeviceSelection, unsimulated: list[int]) -> Finding:
    where = sel.where or sel.path or "the script"
    if sel.blocked_by is not None:
        call, _, why = sel.blocked_by.partition(": ")
        title = (
            f"no device selection found in the files read, but {call} calls {why} before the "
            "first CUDA use: it may select the device; assuming each rank uses cuda:LOCAL_RANK"
        )
    elif sel.kind == "unknown":
        title = (
            f"{where}: could not follow the device index of `{sel.call}`; assuming each rank "
            "uses cuda:LOCAL_RANK"
        )
    elif unsimulated:
        need = (
            " or ".join(" and ".join(g) for g, _ in sel.alternatives if g)
            or "a variable this launch does not set"
        )
        title = (
            f"{where}: no branch of the device selection applies to ranks "
            f"{ranks_text(unsimulated)} (it needs {need}): their GPUs are not simulated"
        )
    else:
        title = f"{where}: part of the device selection could not be followed"
    return finding(
        "RM030",
        title,
        # the lines are quoted once, as evidence (review 28: the detail repeated them)
        detail="What the analysis could not follow is quoted below.",
        evidence=sel.unresolved[:6],
    )
