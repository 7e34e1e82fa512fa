"""Turn recognised events (and ranked causes) into findings with quoted evidence."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from rankmap.codes import lookup
from rankmap.explain.causes import (
    DECIDED,
    Candidate,
    duplicate_candidates,
    mig_evidence,
    ordinal_candidates,
)
from rankmap.explain.collect import Evidence
from rankmap.explain.context import Context, gpu_for_bus
from rankmap.explain.docfacts import plain_python_run
from rankmap.explain.patterns import Event
from rankmap.explain.score_model import UNDECIDED_MARK
from rankmap.explain.signals import is_nccl_tests
from rankmap.findings import Finding, Severity, finding
from rankmap.gpu_sharing import ORDINAL_CATEGORIES, SHARED_GPU_CATEGORIES, as_shared_gpu
from rankmap.pci import try_normalize_bus_id
from rankmap.ranks import rank_phrase, ranks_text

MAX_EVIDENCE = 6

DECIDERS: dict[str, str] = {
    "RM101": "processes per node vs GPUs: the launcher's --nproc-per-node against "
    "`nvidia-smi -L | wc -l` on the host",
    "RM102": "processes per node vs GPUs: the launcher's --nproc-per-node against "
    "`nvidia-smi -L | wc -l` on the host",
    "RM201": "`echo $CUDA_VISIBLE_DEVICES` in the job against the launcher's process count",
    "RM301": "whether the script selects a device per rank: `grep -nE "
    "'set_device|device_id|cuda:' train.py` (or pass --script)",
    "RM302": "`grep -nE 'cuda:[0-9]|set_device\\([0-9]' train.py`",
    "RM401": "`grep -nE 'set_device\\(.*rank|get_rank\\(\\)' train.py`: RANK used where "
    "LOCAL_RANK belongs",
    "RM501": "`echo $CUDA_VISIBLE_DEVICES` printed by every rank (one GPU each?), e.g. "
    "`srun bash -c 'echo $SLURM_LOCALID $CUDA_VISIBLE_DEVICES'`",
    "RM503": "`CUDA_VISIBLE_DEVICES` printed by every rank (the same single GPU everywhere?)",
    "RM601": "`nvidia-smi -L` on the host: MIG lines under one GPU",
    "RM640": "`nvidia-smi -L` on the host: MIG lines under one GPU",
    "RM240": "`echo $CUDA_VISIBLE_DEVICES` and the device index the script/framework selects "
    "(it must be below the number of entries)",
    "RM941": "the framework's own rank banner (LOCAL_RANK / GLOBAL_RANK lines) against the "
    "launcher's processes per node",
    "RM801": "`hostname; cat /proc/sys/kernel/random/boot_id; echo $NCCL_HOSTID` on each node",
}


# How each launcher's ranks print their own list: the Slurm line of RM501 reads wrong to a user
# of mpirun or horovodrun (review 63). Open MPI names the node-local rank
# OMPI_COMM_WORLD_LOCAL_RANK (reference/launchers.md §6).
_PER_RANK_ECHO: dict[str, str] = {
    "mpirun": "`mpirun -np N bash -c 'echo $OMPI_COMM_WORLD_LOCAL_RANK $CUDA_VISIBLE_DEVICES'`",
    "horovodrun": "`horovodrun -np N bash -c 'echo $OMPI_COMM_WORLD_LOCAL_RANK "
    "$CUDA_VISIBLE_DEVICES'`",
    "torchrun": "`print(os.environ['LOCAL_RANK'], os.environ.get('CUDA_VISIBLE_DEVICES'))` at "
    "the top of the script",
}
_PER_RANK_ECHO.update(
    mpiexec=_PER_RANK_ECHO["mpirun"],
    orterun=_PER_RANK_ECHO["mpirun"],
    prterun=_PER_RANK_ECHO["mpirun"],
    accelerate=_PER_RANK_ECHO["torchrun"],
    deepspeed=_PER_RANK_ECHO["torchrun"],
)


def decider(code: str, ctx: Context) -> str:
    """What would decide for ``code``, in the words of the launch the input shows."""
    text = DECIDERS.get(code, "")
    launcher = ctx.launch.launcher if ctx.launch else None
    if code == "RM501" and launcher in _PER_RANK_ECHO:
        return text.replace(
            "`srun bash -c 'echo $SLURM_LOCALID $CUDA_VISIBLE_DEVICES'`", _PER_RANK_ECHO[launcher]
        )
    return text


def quote(ev: Event) -> str:
    """``file:line: text`` for a finding's evidence."""
    return f"{ev.line.where()}: {ev.line.text.strip()[:300]}"


def _gpu_words(ctx: Context, bus: str, host: str | None) -> str:
    found = gpu_for_bus(ctx.machines, bus, host)
    if not found:
        return bus
    h, g = found
    name = f", {g.name}" if g.name else ""
    if host and host != h.hostname:  # the log's host, read with a profile of another name
        return f"{bus} = nvidia-smi GPU {g.nvml_index} on {host} (per profile {h.hostname}: {g.uuid}{name})"
    return f"{bus} = nvidia-smi GPU {g.nvml_index} on {h.hostname} ({g.uuid}{name})"


def _dup_facts(ev: Evidence) -> tuple[list[int], list[str], list[str], list[str]]:
    ranks: list[int] = []
    buses: list[str] = []
    hosts: list[str] = []
    quotes: list[str] = []
    mapped = {(c.host, c.bus_id) for c in ev.rankmap.collisions()}
    for e in ev.of("duplicate_gpu"):
        bus = try_normalize_bus_id(e.bus_id)
        # A WARN numbers ranks in the failing communicator (a split counts from 0): where Init
        # lines map the shared GPU, their world ranks name the pair (rankmap_builder.py).
        if not any(b == bus and e.host in (h, None) for h, b in mapped):
            ranks.extend(e.ranks)
        if bus:
            buses.append(bus)
        if e.host:
            hosts.append(e.host)
        quotes.append(quote(e))
    for c in ev.rankmap.collisions():
        ranks.extend(c.ranks)
        buses.append(c.bus_id)
        if c.host:
            hosts.append(c.host)
        quotes.extend(c.evidence[:2])
    for e in ev.of("multi_rank_gpu", "torch_nccl_error", "nccl_result")[:3]:
        quotes.append(quote(e))
    return sorted(set(ranks)), list(dict.fromkeys(buses)), list(dict.fromkeys(hosts)), quotes


def _version_note(ev: Evidence) -> str:
    fp = ev.fingerprint()
    versions = list(ev.nccl_versions())
    if versions:
        return f" NCCL {versions[0]}."
    return f" NCCL {fp} (from the init.cc line of the WARN)." if fp else ""


def _alternatives(
    ctx: Context, chosen: str, cands: Iterable[Candidate], defaults: Iterable[str], what: str
) -> list[Finding]:
    out: list[Finding] = []
    seen = {chosen}
    pool = [c for c in cands if c.score > 0] + [Candidate(code) for code in defaults]
    for c in pool:
        if c.code in seen:
            continue
        seen.add(c.code)
        why = "; ".join(c.reasons) if c.reasons else "not excluded by the input"
        decide = decider(c.code, ctx)
        out.append(
            finding(
                c.code,
                f"Also possible for the {what}: {lookup(c.code).summary}",
                detail=f"Support: {why}." + (f" Would decide: {decide}." if decide else ""),
                # a pattern several causes share (all ranks on cudaDev 0: no set_device, or MIG)
                # is no alarm of its own: a warning needs more than that one point (review 14)
                severity=Severity.WARNING if c.score > 1 else Severity.INFO,
            )
        )
    return out


def duplicate_findings(ctx: Context, ev: Evidence) -> list[Finding]:
    """Findings for ranks sharing a GPU: best cause first, alternatives after."""
    ranks, buses, hosts, quotes = _dup_facts(ev)
    cands = duplicate_candidates(ctx, ev)
    best = cands[0]
    gpu = ", ".join(_gpu_words(ctx, b, hosts[0] if hosts else None) for b in buses[:3])
    gpu += ", …" if len(buses) > 3 else ""
    who = ranks_text(ranks)
    where = f" on {gpu}" if gpu else ""
    gpus = "one GPU" if len(buses) <= 1 else f"{len(buses)} GPUs, several ranks on each,"
    shared = f"ranks {who} share {gpus}{where}" if ranks else f"several ranks share {gpus}{where}"
    if ev.has("multi_rank_gpu") and not ranks:
        shared += " (NCCL 2.30+ names no ranks; add NCCL_DEBUG=INFO for the Init START lines)"
    vnote = _version_note(ev)
    check = _check_first(ctx, ev, SHARED_GPU_CATEGORIES)
    common: dict[str, Any] = {
        "ranks": ranks,
        "devices": buses,
        "hosts": hosts,
        "evidence": quotes[:MAX_EVIDENCE],
    }
    if check is not None and "invalid device ordinal" in check.title:
        # The simulation assumed set_device(LOCAL_RANK) and predicts ordinal errors, but the log
        # shows ranks sharing a GPU: the cause (the launch) stands, the symptom says the script
        # wraps the index (local_rank % device_count, accelerate >= 0.33) or never selects one.
        # Too many processes then show as ranks wrapping onto one GPU (RM101), not as RM102.
        code = as_shared_gpu(check.code)
        first = finding(
            code,
            f"{lookup(code).summary}: {shared}",
            detail=f"Launch: {check.detail} The log shows a shared GPU rather than an invalid "
            "device ordinal, so the script wraps the index (local_rank % device_count) or never "
            f"selects a device.{vnote}",
            fix=check.fix,
            **common,
        )
        chosen = code
    elif check is not None:
        first = finding(
            check.code,
            check.title,
            detail=f"{check.detail} The log confirms it: {shared}.{vnote}",
            fix=check.fix,
            severity=check.severity,
            **common,
        )
        chosen = check.code
    elif best.score >= DECIDED:
        first = finding(
            best.code,
            f"{lookup(best.code).summary}: {shared}",
            detail="; ".join(best.reasons) + "." + vnote,
            fix=_fix(best.code, ctx),
            **common,
        )
        chosen = best.code
    else:
        decide = "; ".join(decider(c, ctx) for c in ("RM101", "RM301"))
        first = finding(
            "RM103",
            f"Two ranks on one host use the same physical GPU: {shared}",
            detail="NCCL refuses two ranks of one communicator on one GPU of one host. The log "
            f"alone does not say why.{vnote} What would decide: {decide}; or run "
            "`rankmap explain LOG --launch '<launch command>' --script train.py`, or "
            "`rankmap check -- <launch command>`.",
            **common,
        )
        chosen = "RM103"
    defaults = ("RM101", "RM301") if chosen == "RM103" else ()
    return [first, *_alternatives(ctx, chosen, cands, defaults, "shared GPU")]


def ordinal_findings(ctx: Context, ev: Evidence) -> list[Finding]:
    """Findings for ``invalid device ordinal`` in any of its forms."""
    evs = ev.of("invalid_ordinal")
    ranks = sorted({e.rank for e in evs if e.rank is not None})
    ranks += [r for r in ev.failed_ranks() if r not in ranks]
    hosts = list(
        dict.fromkeys(h for h in [*(e.host for e in evs), *(f.host for f in ev.failures)] if h)
    )
    quotes = [quote(e) for e in evs[:4]] + [f.evidence for f in ev.failures[:2] if f.evidence]
    cands = ordinal_candidates(ctx, ev)
    best = cands[0]
    forms = sorted({e.get("form") or "?" for e in evs})
    what = "a rank asked for a CUDA device index that does not exist in its process"
    rank_txt = f" ({rank_phrase(ranks)})" if ranks else ""
    common: dict[str, Any] = {"ranks": ranks, "hosts": hosts, "evidence": quotes[:MAX_EVIDENCE]}
    check = _check_first(ctx, ev, ORDINAL_CATEGORIES)
    if check is not None:
        first = finding(
            check.code,
            check.title,
            detail=f"{check.detail} The log confirms it: {what}{rank_txt}.",
            fix=check.fix,
            severity=check.severity,
            **common,
        )
        chosen = check.code
    elif best.score >= DECIDED:
        first = finding(
            best.code,
            f"{lookup(best.code).summary}{rank_txt}",
            detail="; ".join(best.reasons) + f". Seen as: {', '.join(forms)}.",
            fix=_fix(best.code, ctx),
            **common,
        )
        if best.code == "RM640" and not (mig_evidence(ctx, ev) or ctx.mig_told):
            # the assert alone: MIG is its likeliest cause, not a certain one (a list changed after
            # CUDA counted the GPUs fails the same way, pytorch/pytorch#126344)
            first = replace(
                first,
                title="PyTorch's device count and CUDA's disagree: MIG instances, or a "
                f"CUDA_VISIBLE_DEVICES changed after the count{rank_txt}",
                severity=Severity.WARNING,
            )
        chosen = best.code
    elif _one_program(ctx, ev, ranks):
        first = _one_program_ordinal(forms, common)
        return [first, *_alternatives(ctx, "RM046", cands, ("RM102",), "invalid device ordinal")]
    else:
        chosen, *others = _undecided_ordinal(ctx, cands)
        decide = "; ".join(decider(c, ctx) for c in (chosen, *others))
        first = finding(
            chosen,
            f"invalid device ordinal: {what}{rank_txt}",
            detail=f"Seen as: {', '.join(forms)}. {_UNDECIDED_ORDINAL[chosen]} What would decide: "
            f"{decide}.",
            **common,
        )
        return [first, *_alternatives(ctx, chosen, cands, others, "invalid device ordinal")]
    return [first, *_alternatives(ctx, chosen, cands, (), "invalid device ordinal")]


def _one_program(ctx: Context, ev: Evidence, ranks: list[int]) -> bool:
    """The failing process is a program of its own: the launch is a plain ``python``, or none is
    known and the writer describes a run with no sign of several processes
    (DocFacts.shows_one_program); the log shows no ranks or NCCL Init lines either. More
    processes than GPUs (RM102) needs several; one process past the device count asked for an
    index the machine lacks."""
    if ranks or ev.rankmap.records or ctx.several_processes_told:
        return False
    launch = ctx.launch
    if launch is None:
        return ctx.one_program_told
    single = (launch.nproc_per_node or 1) <= 1 and (launch.nnodes or 1) <= 1
    # `python -m vllm.entrypoints... --tensor-parallel-size 2` starts a worker per GPU itself
    return launch.launcher == "python" and single and plain_python_run(launch.command)


def _one_program_ordinal(forms: list[str], common: dict[str, Any]) -> Finding:
    return finding(
        "RM046",
        "invalid device ordinal: one program asked for a CUDA device index beyond the GPUs it sees",
        detail=f"Seen as: {', '.join(forms)}. No launcher, rank or second process shows in the "
        "input, so no processes outnumber the GPUs. "
        f"{UNDECIDED_MARK} which index: the program's own (a hard-coded cuda:N or GPU option, a "
        "1-based index, a checkpoint's saved device) at or above the number of GPUs the process "
        "sees, or one a visible-devices list or a framework renumbered. What would decide: "
        "`python -c 'import torch; print(torch.cuda.device_count())'` against the index the "
        "program selects.",
        **common,
    )


# What an undecided ordinal failure leaves open (UNDECIDED_MARK: the scoring decides).
_UNDECIDED_ORDINAL = {
    "RM102": f"{UNDECIDED_MARK} whether there are more processes than GPUs, each process sees "
    "only its own GPU, or the global rank is used as the index.",
    "RM201": f"{UNDECIDED_MARK} which: the launch fits the machine's GPUs, so the process saw "
    "fewer of them than the machine has: a CUDA_VISIBLE_DEVICES narrower than the process count, "
    "each process seeing only its own GPU, or the global rank used as the index.",
    "RM501": f"{UNDECIDED_MARK} which: the launch and its CUDA_VISIBLE_DEVICES fit the GPUs, so "
    "the process saw fewer of them than the list gives the job: each process seeing only its own "
    "GPU (a per-process list, a scheduler's binding), or the global rank used as the index.",
}


def _undecided_ordinal(ctx: Context, cands: list[Candidate]) -> tuple[str, ...]:
    """The lead code and the alternatives of an ordinal failure no cause explains: more
    processes than GPUs first, unless the launch is known to fit the machine's GPUs (then a
    process saw fewer GPUs than the machine has; on one node the global rank is the local one)."""
    fits = any(c.code == "RM102" and c.score < 0 for c in cands)
    if not fits:
        return ("RM102", "RM501", "RM401")
    one_node = ctx.launch is not None and (ctx.launch.nnodes or 1) <= 1
    rest = ("RM501",) if one_node else ("RM501", "RM401")
    # a visible-devices list the user set that fits the processes is no narrowing either
    if ctx.user_cvd() is not None and ctx.visible_fits_launch():
        return rest
    return ("RM201", *rest)


# check's findings about how a PyTorch script reads its rank/device: void for nccl-tests.
SCRIPT_RULES = frozenset({"RM301", "RM302", "RM401", "RM402", "RM901", "RM903", "RM905"})


def _check_first(ctx: Context, ev: Evidence, categories: frozenset[str]) -> Finding | None:
    if not ctx.launch:
        return None
    tests = is_nccl_tests(ctx, ev)
    for f in ctx.launch.check_findings:
        if tests and f.code in SCRIPT_RULES:
            continue
        if f.severity is Severity.ERROR and f.category in categories:
            return f
    return None


def _fix(code: str, ctx: Context) -> str:
    nproc = ctx.launch.nproc_per_node if ctx.launch else None
    cvd = ctx.cvd_entries()
    gpus = ctx.gpus_per_node()
    if code == "RM201" and nproc and cvd is not None:
        return (
            f"Start {len(cvd)} processes per node (`--nproc-per-node {len(cvd)}`), or expose "
            f"{nproc} GPUs in CUDA_VISIBLE_DEVICES (or unset it)."
        )
    if code in ("RM101", "RM102") and nproc and gpus:
        return f"Start at most {gpus} processes per node (`--nproc-per-node {gpus}`)."
    return lookup(code).fix


_OTHER_PROCESSES = (
    "Other processes hold memory on the GPU that ran out, and nothing in the input shows a job of "
    "several ranks: they may be another job's, another user's or a stale process. Would decide: "
    "`nvidia-smi` during the run (whose PIDs sit on that GPU); if they are ranks of this job, "
    "every rank needs its own GPU (`torch.cuda.set_device(LOCAL_RANK)` before any CUDA work)."
)


def _job_of_several_ranks(ctx: Context, ev: Evidence) -> bool:
    """Whether the input shows a job of several ranks: the launch's process count where a launch
    is known; else a pasted text that tells one (a launcher, DDP, ranks named), a rank map, or
    events of a rank past 0 (a ``[rank1]:`` prefix, a rank's own line)."""
    launch = ctx.launch
    if launch is not None and launch.nproc_per_node is not None:
        # the launch's own count decides (its words are in the text too: `torchrun
        # --nproc_per_node=1` is one process)
        return launch.nproc_per_node * (launch.nnodes or 1) > 1
    if ctx.several_processes_told or ev.rankmap.records:
        return True
    ranks = {e.rank for events in ev.events.values() for e in events if e.rank is not None}
    return len(ranks) > 1 or any(r > 0 for r in ranks)  # (a lone "[rank0]:" is one process)


def oom_findings(ctx: Context, ev: Evidence) -> list[Finding]:
    """CUDA out of memory: when several processes hold memory on the failing GPU, the cause.

    PyTorch's OOM message lists the other processes on the GPU (``Process N has X GiB memory in
    use``). Several ranks on one GPU without an NCCL duplicate-GPU error means NCCL itself was
    set up per rank but allocations still landed on the current device, cuda:0 unless the rank
    called ``torch.cuda.set_device`` first (pytorch_nccl.md §1) -> RM301 unless the context
    decides otherwise (more processes than GPUs, a narrowed CUDA_VISIBLE_DEVICES, ...).
    """
    evs = ev.of("oom")
    procs = max(int(e.get("procs") or 0) for e in evs)
    gpus = sorted({e.get("gpu") for e in evs if e.get("gpu") is not None}, key=str)
    quotes = [quote(e) for e in evs[:3]]
    if procs < 2:
        return [
            finding(
                "RM040",
                "CUDA out of memory (one process per GPU as far as the log shows)",
                evidence=quotes,
                fix="Reduce batch size / model memory; check `nvidia-smi` for other processes.",
                severity="warning",
            )
        ]
    where = f"GPU {', '.join(map(str, gpus)) or '?'} shared with {procs} other processes"
    symptom = finding("RM011", f"CUDA out of memory on {where}", evidence=quotes)
    if not _job_of_several_ranks(ctx, ev):
        # the processes PyTorch lists are anyone's (another job, another user, a stale server):
        # with no rank of a job of several in the input, none is known to be a rank
        return [
            replace(
                symptom,
                severity=Severity.WARNING,
                detail=_OTHER_PROCESSES,
                fix="Free the GPU (stop the other processes) or run on one nobody uses "
                "(`CUDA_VISIBLE_DEVICES=<free index>`), or reduce the model's memory.",
            )
        ]
    cands = [c for c in duplicate_candidates(ctx, ev) if c.code not in ("RM801", "RM503")]
    best = cands[0] if cands else Candidate("RM301")
    if (best.score < DECIDED or best.code == "RM301") and gpus and all(str(g) != "0" for g in gpus):
        # the failing GPU is not the process's cuda:0: the rank did select a device, so "every
        # rank on cuda:0" does not explain it; another process of the job or of another job
        # shares that GPU (review 65) — the rest of the input decides
        symptom = replace(
            symptom,
            detail="The process failed on a GPU other than its cuda:0, so it did select its device; "
            "another process shares that GPU: a rank of this job (more processes than GPUs, a list "
            "that repeats a GPU) or another job's (a container or a scheduler handing out GPUs the "
            "job also uses). Would decide: `nvidia-smi` during the run (which PIDs sit on that "
            "GPU, and whose they are).",
        )
        return [symptom, *_alternatives(ctx, "RM011", cands, (), "out-of-memory GPU")]
    code = best.code if best.score >= DECIDED else "RM301"
    why = (
        "; ".join(best.reasons)
        if best.score >= DECIDED
        else (
            "several processes allocate on one GPU while NCCL raised no duplicate-GPU error: ranks "
            "touched CUDA (model.cuda(), torch.load, a barrier) before selecting their own device"
        )
    )
    first = finding(
        code,
        f"{lookup(code).summary}: CUDA out of memory on {where}",
        detail=f"{why}. Would decide: `nvidia-smi` during the run (which PIDs sit on GPU 0) and "
        f"{decider(code, ctx) or decider('RM301', ctx)}.",
        fix=_fix(code, ctx),
        evidence=quotes,
    )
    return [first, symptom, *_alternatives(ctx, code, cands, (), "out-of-memory GPU")]
