"""Scoring over all evidence: every category gets points from every signal and from the context.

Sources of points: the specific findings of :func:`rankmap.explain.engine.diagnose` (a decided
cause weighs most, an undecided one little), the signal catalogue's hits in every segment of the
input (:mod:`rankmap.explain.docread`), the launch simulated by ``check`` (its error findings),
the script analysis (pasted code or ``--script``), ``--env`` and the machine. The category with
the most points leads. When it is not the one the specific rules chose, a best-guess finding
(``RMx45``) comes first, quoting its reasons, followed by the specific findings and the
runners-up; when the margin is small it names the fact that would decide and the command that
shows it. "Nothing recognised" stays only where nothing of this family failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from rankmap.codes import lookup
from rankmap.explain.combinations import from_combinations
from rankmap.explain.combinations_launch import one_machine_told
from rankmap.explain.context import Context
from rankmap.explain.docfacts import DocFacts, Hit, in_title
from rankmap.explain.priors import HAND as CLASS_PRIORS
from rankmap.explain.priors import leading_class
from rankmap.explain.score_model import UNDECIDED_MARK, Scores
from rankmap.explain.unexplained import gpu_failure_unplaced, outside_beside_map, outside_named
from rankmap.findings import Finding, Severity, finding
from rankmap.gpu_sharing import ORDINAL_CAUSES, SHARED_GPU_CAUSES
from rankmap.ranks import listed

BEST_GUESS: dict[str, str] = {
    "other": "RM045",
    "version_mismatch": "RM055",
    "oversubscribed": "RM145",
    "visible_devices_mismatch": "RM245",
    "no_set_device": "RM345",
    "global_rank_as_device": "RM445",
    "per_process_visible_devices": "RM545",
    "mig": "RM645",
    "container_mapping": "RM745",
    "host_identity": "RM845",
    "launcher_config": "RM945",
}
# The shared cause whose fix a best guess of each category gives (rankmap.codes.core).
FIX_OF: dict[str, str] = {
    "other": "RM040",
    "version_mismatch": "RM050",
    "oversubscribed": "RM101",
    "visible_devices_mismatch": "RM201",
    "no_set_device": "RM301",
    "global_rank_as_device": "RM401",
    "per_process_visible_devices": "RM501",
    "mig": "RM601",
    "container_mapping": "RM701",
    "host_identity": "RM801",
    "launcher_config": "RM901",
}
# A best guess names a category, not one of its specific causes: where the specific code's fix
# belongs to one cause (RM050: a driver too old for PyTorch's CUDA), the guess gives the
# category's (review 18: a TensorFlow paste was told to install another PyTorch build)
GENERAL_FIX: dict[str, str] = {
    "version_mismatch": "Make the versions fit: the CUDA / cuDNN / NCCL the framework build "
    "expects (its tested configurations) against what is installed and what the driver supports "
    "(`nvidia-smi`), and the same build on every node; install the matching libraries or a build "
    "for the installed ones.",
    # the category's fixes, not one of its causes' (review 54: a Docker renumbering was told to
    # give each container its own GPU, a vLLM node address to unset NCCL_HOSTID)
    "container_mapping": "Give the container the GPUs its processes need (`docker run --gpus "
    "all`, `--gpus '\"device=0,1\"'` or an NVIDIA_VISIBLE_DEVICES listing them; a pod's "
    "`nvidia.com/gpu` limit as large as the processes it starts); inside, they are numbered from "
    "0: drop (or renumber) a CUDA_VISIBLE_DEVICES written with the host's numbers; containers or "
    "pods that must not share a GPU each get their own (no time-slicing), compared by UUID "
    "(`nvidia-smi -L` inside each).",
    # (pods or containers that share the host's network on one node share its hostname and boot
    # id: the host network is the cause there, not the fix; review 63)
    "host_identity": "Give every machine, container or node its own identity: distinct hostnames "
    "(not a cloned image's or one `--hostname`), distinct node addresses (`VLLM_HOST_IP` / `ray "
    "start --node-ip-address` per node; containers on one bridge network share 172.17.0.x: "
    "`--network host` across machines), its own node rank, and no NCCL_HOSTID copied between "
    "machines; several pods or containers on one node with the host's network share its hostname "
    "and boot_id: give each its own NCCL_HOSTID (reference/nccl.md (b)) or place them on "
    "different nodes.",
    "mig": "CUDA shows a process one MIG instance: start one process per instance, each given one "
    "`MIG-` UUID; an NCCL job needs its ranks on different physical GPUs (whole GPUs, or one "
    "instance of each), or NCCL >= 2.30 with `NCCL_MULTI_RANK_GPU_ENABLE=1` (experimental).",
    # a list that did not apply, is misspelled, is numbered in nvidia-smi's order or is shorter
    # than the processes: one guess, several causes (review 58: a CUDA_DEVICE_ORDER case was told
    # to start as many processes as the list has entries)
    "visible_devices_mismatch": "Make CUDA_VISIBLE_DEVICES fit the job: set it in the environment "
    "the processes start with (before CUDA initialises, spelled exactly so, not overwritten by a "
    "launcher or a sourced file), list as many GPUs as processes per node (or as the engine's "
    "parallel size), and count in CUDA's numbering inside the process (the listed GPUs become "
    "cuda:0, cuda:1, …); `CUDA_DEVICE_ORDER=PCI_BUS_ID` makes CUDA number the GPUs as nvidia-smi "
    "does.",
    "launcher_config": "Make the launcher and the framework agree: the process and node counts, "
    "the node rank, the rank variables the launcher sets against those the code reads, and the "
    "order of the framework's distributed set-up (its init call before any device use); the "
    "launcher's effective settings are the full command, `accelerate env`, the DeepSpeed "
    "hostfile.",
}
DECIDE: dict[str, str] = {
    "oversubscribed": "processes per node against GPUs: `nvidia-smi -L | wc -l` vs the launcher's "
    "--nproc-per-node / -np",
    "visible_devices_mismatch": "what each process sees: `echo $CUDA_VISIBLE_DEVICES` (or "
    "HIP_VISIBLE_DEVICES) in the job, against the device index the code selects",
    "no_set_device": "whether every rank selects its own GPU: `nvidia-smi` during the run (all "
    "PIDs on GPU 0?) and `grep -nE 'set_device|cuda:|device=' train.py`",
    "global_rank_as_device": "the index used: `grep -nE 'set_device\\(.*rank|get_rank\\(\\)' "
    "train.py` on a multi-node run (RANK >= GPUs per node fails)",
    # (neutral: the guess does not know the launcher; findings_map.decider speaks its words)
    "per_process_visible_devices": "one GPU per process? `CUDA_VISIBLE_DEVICES` printed by every "
    "process (under srun with $SLURM_LOCALID, under mpirun with $OMPI_COMM_WORLD_LOCAL_RANK, in "
    "each Ray/dask worker)",
    "mig": "`nvidia-smi -L` on the host: MIG lines under a GPU, and the MIG- UUIDs each process gets",
    "container_mapping": "`nvidia-smi -L` and `echo $NVIDIA_VISIBLE_DEVICES` inside each "
    "container/pod, against the host's `nvidia-smi -L`",
    "host_identity": "`hostname; cat /proc/sys/kernel/random/boot_id` on every node/pod (equal "
    "values make NCCL treat them as one host)",
    "launcher_config": "the launcher's effective settings: the full launch command, `accelerate "
    "env` / the DeepSpeed hostfile, and how the script reads its local rank",
    "version_mismatch": "`nvidia-smi` (driver, CUDA version), `python -c 'import torch; "
    "print(torch.version.cuda, torch.cuda.get_arch_list())'` and the NCCL version on every node",
    "other": "`dmesg | grep -i xid` (a GPU fault the driver logged), `nvidia-smi topo -m`, and "
    "a re-run with `CUDA_LAUNCH_BLOCKING=1` and `NCCL_DEBUG=INFO` (once with `NCCL_P2P_DISABLE=1`)",
}
# The categories of the causes the specific rules know for a shared GPU or an invalid ordinal
# (rankmap.gpu_sharing): a guess of one of them explains such a failure.
SYMPTOM_CAUSES = frozenset(
    lookup(code).category for _, code in (*SHARED_GPU_CAUSES, *ORDINAL_CAUSES)
)
# Specific findings that name a symptom, not a cause: they weigh little.
SYMPTOM_CODES = frozenset({"RM103", "RM040", "RM041", "RM906", "RM011", "RM020", "RM402", "RM042"})
# A finding that says the log cannot decide names a symptom, not its category: its own category
# gets no more than a failure class's prior would give (rankmap.explain.priors).
UNDECIDED_POINTS = 0.5
# Rendezvous/store and socket errors: what every rank prints when a peer or port is unreachable.
NETWORK_CODES = frozenset({"RM906", "RM041"})
# Mapping symptoms filed under ``other``: several processes on one GPU in an OOM (RM011), one
# program's device index past the GPUs it sees (RM046).
OTHER_MAPPING_SYMPTOMS = frozenset({"RM011", "RM046"})
# Catalogue classes whose weights are priors of a generic device/communicator error.
GENERIC_PRIORS = frozenset({"nccl-generic-error", "comm-error-any", "device-error-any"})
NO_CAUSE = ("RM003", "RM042")  # "nothing recognised" and the rank map summary
NAMES_CAUSE = 3.0  # a single support this big names a cause the rank map summary does not
MIN_GUESS = 2.0  # a best guess needs at least this much support
WEAK_GUESS = 0.1  # ... or any points when the input shows a failure of this family
CONTEXT_GUESS = 3.0  # failure words and context, no failure of the family: this much
STRONG = 5.0  # a single support this big names the cause
NO_FAILURE_GUESS = 4.0  # without any failure in the input, only a clear signal gets a guess
CLEAR_MARGIN = 3.0
# The least support that replaces an undecided mapping failure (RM102/RM103) by a best guess of
# another category: a framework, a setting or a symptom (2 points and more), not a point of
# context
OVERRIDE_UNDECIDED = 2.0
# The first words of a best guess whose support is below every alarm's (at info).
WEAK_NOTE = (
    "Weak evidence: nothing in the input decides the cause and the support is below what an "
    "alarm needs; this is the best-supported of the known causes, to check first. "
)
# The title is the reporter's summary of the problem: what it names weighs more.
TITLE_WEIGHT = 2.0


def _from_findings(base: list[Finding], s: Scores) -> None:
    for i, f in enumerate(base):
        if f.code == "RM003" or f.severity is Severity.INFO:
            continue
        if f.code in NETWORK_CODES:  # a network failure: not of this family on its own
            s.network_printed = True
            s.add(f.category, 1.0, f"{f.code}: {f.title}", f.evidence[0] if f.evidence else None)
            continue
        s.failure = True
        s.outside_printed |= f.code == "RM040"
        # several processes on one GPU (RM011) is a mapping symptom filed under ``other``
        s.mapping_failure |= f.category != "other" or f.code in OTHER_MAPPING_SYMPTOMS
        undecided = f.code in SYMPTOM_CODES or UNDECIDED_MARK in f.detail
        if i == 0 and undecided and UNDECIDED_MARK in f.detail:
            pts = UNDECIDED_POINTS  # "the log alone does not say": the class priors decide
        elif i == 0:
            pts = 2.0 if undecided else (9.0 if f.severity is Severity.ERROR else 5.0)
        else:
            pts = 1.0 if f.severity is Severity.WARNING else 2.0
        s.add(f.category, pts, f"{f.code}: {f.title}", f.evidence[0] if f.evidence else None)


def _from_hits(doc: DocFacts, s: Scores, base: list[Finding]) -> None:
    # a specific mapping finding (a duplicate GPU, an invalid ordinal) outweighs the priors of
    # a generic device/communicator error: those then only mark the failure
    specific = any(
        f.category != "other" and f.severity is not Severity.INFO and f.code not in NETWORK_CODES
        for f in base
    )
    hits = _hits_that_count(doc)
    lead_class = leading_class(frozenset(hits))
    s.failure_class = lead_class
    counted = []
    for hit in hits.values():
        sig = hit.signal
        if sig.failure and sig.id in CLASS_PRIORS:
            s.weak_failure = True  # a failure class: of this family, but its weights are priors
            if sig.id != lead_class:
                continue  # one prior per failure: the most specific class's
            if not _outside(doc, own=True, printed=True):  # a prior, not what the job printed
                s.note_failure(sig.supports)
        elif sig.failure:
            s.failure = True
            s.note_failure(sig.supports)
        # a generic marker (``nccl-generic-error``: the classes among GENERIC_PRIORS that do not
        # lead were skipped above) adds no prior next to the class that leads either: one prior
        # per failure, the most specific
        generic = sig.id in GENERIC_PRIORS
        if not (generic and (specific or lead_class not in (None, sig.id))):
            counted.append(hit)
    # the title ranks the causes of a failure the paste shows; naming context in a title (a
    # CUDA_VISIBLE_DEVICES, a launcher) is no evidence that anything of this family failed
    ranks_causes = _shows_family_failure(s, doc)
    for hit in counted:
        sig = hit.signal
        quote = f"{hit.where}: {hit.excerpt}"
        # a framework named in the title is context like anywhere else ("Ray Train ... hangs")
        title = ranks_causes and sig.framework is None and in_title(doc, hit)
        for cat, w in sig.supports:
            pts = w * TITLE_WEIGHT if title and w > 0 else w
            where = "title" if title else hit.segment
            s.add(cat, pts, f"[{sig.id}] `{hit.excerpt[:100]}` ({where}; {sig.fact})", quote)
            if sig.fix and pts > 0:
                s.name_fix(cat, pts, sig.fix)


# check's DeviceSelection kinds of pasted code that select a GPU per rank
PER_RANK_SELECTIONS = frozenset({"local_rank", "global_rank"})
# What one process driving several GPUs shows by design (more memory on GPU 0, `.cuda()`)
_GPU0_SIGNS = frozenset({"all-on-gpu0", "cuda-no-index-code", "one-gpu-used"})


def _hits_that_count(doc: DocFacts) -> dict[str, Hit]:
    """The catalogue hits that score: a CUDA call failing inside NCCL is no failure of this
    family when NCCL's own warning names the CUDA error (``Cuda failure 'out of memory'``); the
    GPU-0 signs of one process that drives several GPUs (nn.DataParallel, device_map="auto")
    with no job of several processes in sight are its design, not ranks on one GPU (review 23);
    a bare ``'cuda'`` device in code that calls set_device(rank) is the selected one (a
    ``.cuda()`` beside DDP's ``device_ids=[local_rank]`` alone is still cuda:0, review 73)."""
    hits = doc.hits
    if doc.cuda_error_named:
        hits = {k: h for k, h in hits.items() if k != "nccl-cuda-call-failed"}
    if single_process(doc):
        hits = {k: h for k, h in hits.items() if k not in _GPU0_SIGNS}
    if doc.code_kind in PER_RANK_SELECTIONS and "set_device" in (doc.code_call or ""):
        # `device="cuda"` is the current device: the one set_device(rank) selected (review 74)
        hits = {k: h for k, h in hits.items() if k != "cuda-no-index-code"}
    return hits


def single_process(doc: DocFacts | None) -> bool:
    """One process drives several GPUs (nn.DataParallel, device_map) and no job of several
    processes shows: its device choices are no ranks' (review 23)."""
    return (
        doc is not None
        and "single-process-multi-gpu" in doc.hits
        and "multi-process-job" not in doc.hits
        and doc.gpu0_extra is None  # a process table of several ranks, each on GPU 0 and its own
    )


def _outside(doc: DocFacts | None, *, own: bool = False, printed: bool = False) -> bool:
    """Whether the input shows a failure outside this family (``DocFacts.shows_outside``)."""
    return doc is not None and doc.shows_outside(own=own, printed=printed)


def _shows_family_failure(s: Scores, doc: DocFacts | None) -> bool:
    """Whether the evidence so far shows a failure of this family: a specific finding or
    failure signal, or a failure class next to no failure outside the family."""
    if doc is not None and doc.hypothetical:
        return False  # the messages are named in a question, not printed by a run
    return s.failure or (s.weak_failure and not _outside(doc))


def _from_launch_and_code(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    if ctx.launch:
        # a job whose output shows a failure of its own outside the family (an OOM, a data error)
        # ran past its device selection: the simulation's predicted failure is a possible cause
        # then, not the failure that happened
        ran_past = _outside(doc, own=True, printed=True)
        seen: set[str] = set()
        for f in ctx.launch.check_findings:
            if f.severity is Severity.ERROR and f.category not in seen:
                seen.add(f.category)
                s.mapping_failure |= not ran_past  # the launch fails on this machine (simulated)
                s.add(f.category, 3.0, f"the launch simulated by check: {f.code} {f.title}")
        if ctx.launch.gpus_per_task == 1:
            s.add("per_process_visible_devices", 3.0, "srun --gpus-per-task=1: one GPU per task")
    sel = ctx.selection()
    kind = {"global_rank": ("global_rank_as_device", 5.0), "constant": ("no_set_device", 4.0)}
    if _one_node(ctx, doc):  # one machine: the global rank is the local one (review 46)
        kind.pop("global_rank")
    if sel in kind:
        cat, pts = kind[sel]
        s.add(cat, pts, f"the script analysis: device selection {sel}")
    if doc and doc.fixed_device_of_one_program():
        kind.pop("constant")  # (as the engine leaves it out of the context)
    if doc and doc.code_kind in kind and sel != doc.code_kind and not single_process(doc):
        cat, pts = kind[doc.code_kind]
        s.add(
            cat, pts - 1, f"the pasted code selects its device by {doc.code_kind}: {doc.code_call}"
        )


def _one_node(ctx: Context, doc: DocFacts | None) -> bool:
    """The job runs on one machine: the launch says so, or the text ("a single 4 GPU machine")
    and no launch, host list or "multi-node" says otherwise ("single node works, two fail")."""
    if ctx.launch is not None and ctx.launch.nnodes is not None:
        return ctx.launch.nnodes <= 1 and not (doc and doc.hosts_in_launch >= 2)
    return bool(doc and doc.one_machine and one_machine_told(doc))


def _from_env_and_machine(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    cvd = ctx.env.get("CUDA_VISIBLE_DEVICES", "")
    entries = [e.strip() for e in cvd.split(",") if e.strip()]
    if len(entries) != len(set(entries)):
        s.add(
            "visible_devices_mismatch",
            5.0,
            f"CUDA_VISIBLE_DEVICES={listed(cvd.split(','))} repeats an entry: a repeated ordinal makes the "
            "visible set empty (reference/cuda_devices.md §1)",
        )
    if "MIG-" in cvd:
        s.add("mig", 4.0, f"CUDA_VISIBLE_DEVICES names MIG instances ({listed(cvd.split(','))})")
    if any(g.mig_mode for h in ctx.machines for g in h.gpus):
        s.add("mig", 3.0, "the machine has MIG mode enabled")
    elif doc and doc.smi_mig:
        s.add("mig", 4.0, "the pasted nvidia-smi table shows MIG mode enabled", doc.smi_mig)
    if doc and doc.mig_requested >= 2:
        s.add(
            "mig",
            3.0,
            f"a pod requests {doc.mig_requested} MIG instances: CUDA enumerates one MIG instance "
            "per process, and NCCL has no P2P between MIG instances (reference/nccl.md (c))",
        )


def score_all(base: list[Finding], ctx: Context, doc: DocFacts | None) -> Scores:
    """Every category's points from the findings, the catalogue hits and the context."""
    s = Scores()
    _from_findings(base, s)
    if doc is not None:
        _from_hits(doc, s, base)
    _from_launch_and_code(ctx, doc, s)
    _from_env_and_machine(ctx, doc, s)
    from_combinations(ctx, doc, s, base)
    return s


def rescore(
    base: list[Finding],
    ctx: Context,
    doc: DocFacts | None,
    *,
    named: tuple[tuple[int, ...], tuple[str, ...]] = ((), ()),
    job_ranks: Callable[[], tuple[int, ...]] | None = None,
) -> tuple[list[Finding], Scores]:
    """The final findings: the best-supported cause first (see module docstring).

    ``named``: the ranks and devices the input names (failing ranks, GPU/MIG UUIDs), for a best
    guess whose specific findings name none. ``job_ranks``: reads every rank the lines name — for
    a best guess (a cause of the whole job) where no line names a failing one, and only then; a
    finding that reports a failure keeps to the ranks that failed.
    """
    s = score_all(base, ctx, doc)
    s.named = named
    out, s = _rescored(base, ctx, doc, s)
    out = _network_alone_is_info(out)
    out = gpu_failure_unplaced(out, doc)
    if doc is not None and out and out[0].code == "RM042":
        out = outside_beside_map(out, doc)
    if out and out[0].code != "RM003" and not out[0].ranks and named[0]:
        out[0] = replace(out[0], ranks=named[0])  # ranks the input names as failing
    guess = bool(out) and out[0].code in BEST_GUESS.values() and not out[0].ranks
    if guess and job_ranks is not None and (ranks := job_ranks()):
        out[0] = replace(out[0], ranks=ranks)  # the cause is the job's: its ranks
    if out and out[0].code != "RM003" and not out[0].devices and named[1]:
        out[0] = replace(out[0], devices=named[1])  # GPUs the input names (explain/named.py)
    return out, s


def _rescored(
    base: list[Finding], ctx: Context, doc: DocFacts | None, s: Scores
) -> tuple[list[Finding], Scores]:
    ranked = s.ranked()
    lead = base[0] if base else None
    if not ranked:
        return base, s
    # support below an alarm's still names the possible cause, at info, rather than "nothing
    # recognised": the input is a report of a problem, and the runners-up and the deciding
    # question help more than a bare list of what was read
    below = not _may_guess(ranked[0], s, doc)
    if below and (ranked[0][1] <= 0 or _outside(doc) or any(f.code != "RM003" for f in base)):
        return outside_named(base, doc), s
    winner, pts = ranked[0]
    if doc and "outside-model-size" in doc.hits and s.strongest(winner) < STRONG:
        return base, s  # "the model is too big": only a message naming the cause overrides it
    # the rank map summary (RM042, "Nothing to fix") names no cause: a failure it did not
    # explain that a signal names (nccl-tests' wrong results, an IOMMU fault: 3 points or more)
    # is the guess's to name; a generic NCCL warning next to a clean map stays the map (review 22)
    named = lead is not None and lead.code == "RM042" and s.strongest(winner) >= NAMES_CAUSE
    # a store that could not be bound or reached is a network symptom: a support that names
    # the cause of the same category (nested launchers sharing a port) leads instead
    named |= lead is not None and lead.code in NETWORK_CODES and s.strongest(winner) >= STRONG
    if lead is not None and lead.code != "RM003" and lead.category == winner and not named:
        return [_decided_by_input(lead, s, winner), *base[1:]], s
    if (
        lead is not None
        and _undecided_mapping(lead)
        and (winner == "other" or pts < OVERRIDE_UNDECIDED or _one_program_stays(lead, winner, s))
    ):
        # a duplicate GPU / an invalid ordinal the log shows is a mapping failure: "other" does
        # not explain it, and context of a point or so (an NCCL INFO "via P2P/IPC" line of
        # every healthy log) does not replace its deciding question (review 19)
        return base, s
    runner = ranked[1] if len(ranked) > 1 else None
    margin = pts - (runner[1] if runner else 0.0)
    strong = pts >= 7 and margin >= CLEAR_MARGIN and s.strongest(winner) >= STRONG
    rest = [f for f in base if f.code != "RM003"]
    # outscoring a decided error is not weak evidence: the guess leads at error severity then
    decided_error = any(f.severity is Severity.ERROR and _demoted(f) is f for f in rest)
    # a mapping failure the job printed (a duplicate GPU, an invalid ordinal) is certain, only
    # its cause is guessed: the guess that explains it takes its error severity (exit 1 stays)
    # — when the guess is one of the causes the specific rules know for it (SYMPTOM_CAUSES) or a
    # support names it, not a setting the context adds (review 61: a docker run beside a
    # Duplicate GPU); otherwise the failure keeps its error and leads, the guess follows
    printed = any(f.severity is Severity.ERROR and _undecided_mapping(f) for f in rest)
    explains = (
        winner in SYMPTOM_CAUSES
        or s.strongest(winner) >= NAMES_CAUSE
        or _container_renumbers(winner, doc, lead)
    )
    decided_error |= printed and explains
    severity = Severity.INFO if below else _guess_severity(winner, strong or decided_error, s, doc)
    # a symptom whose cause the log alone does not decide follows the cause that leads, also
    # when that cause leads at error (review 54: an undecided RM102 stayed an error beside it);
    # a printed mapping failure the guess does not explain keeps its error (exit 1)
    keep = printed and severity is not Severity.ERROR
    rest = [f if keep and _undecided_mapping(f) else _demoted(f) for f in rest]
    if winner == "host_identity":
        rest = [_one_host_count(f) for f in rest]
    guess = _guess_finding(winner, pts, runner, margin, s, lead, severity, weak=below)
    runners = [_runner_finding(c, p, s) for c, p in ranked[1:3]]
    return [guess, *rest, *runners], s


def _one_host_count(f: Finding) -> Finding:
    """Processes counted per host when machines share one host identity: NCCL's one host is
    several machines, so "more processes on a node than GPUs" is that count, not a cause of its
    own (review 74: two cloned VMs with 4 GPUs and 4 processes each)."""
    if f.code != "RM101" or f.severity is Severity.INFO:
        return f
    return replace(
        f,
        severity=Severity.INFO,
        detail=f"{f.detail} (Counted on one NCCL host that the leading finding shows to be "
        "several machines: per machine the processes may fit.)",
    )


def _container_renumbers(winner: str, doc: DocFacts | None, lead: Finding | None) -> bool:
    """A container given some of the host's GPUs (``--gpus device=2,3``, ``--gpus 2``, a pod's
    GPU limit) numbers them from 0 inside (RM703): an invalid ordinal (a host index the program
    keeps asking for) is the container's to explain when the container leads (review 74); a
    duplicate GPU is not (review 61)."""
    ordinal = lead is not None and lead.code in ORDINAL_LEADS
    return (
        ordinal and winner == "container_mapping" and doc is not None and bool(doc.gpus_requested)
    )


# The undecided invalid-ordinal findings: several processes (RM102), one program (RM046).
ORDINAL_LEADS = frozenset({"RM102", "RM046"})


def _exception_alone(s: Scores) -> bool:
    """Whether the only failure is an exception whose class names nothing of this family (a
    Python exception, a traceback): of any program, a best guess of ``other`` is no alarm then
    (review 21: a bare ValueError or a shape mismatch was an ``other`` warning)."""
    return not s.failure and s.failure_class == "exception-any"


def _guess_severity(winner: str, decided: bool, s: Scores, doc: DocFacts | None) -> Severity:
    """How loud a best guess is: an error needs a failure of this family and a decided cause;
    a cause guessed from context alone (a MIG profile, a Slurm binding, a CUDA_VISIBLE_DEVICES)
    in an input that reports no failure at all — no failure signal, no failure words — is a
    possible cause at ``info``: an alarm needs positive evidence."""
    if _shows_family_failure(s, doc):
        if s.network_printed and not s.failure and winner != "other":
            # a port in use or an unreachable store is what the job printed; the family shows
            # only in the reporter's words (b22 dev: two single-GPU jobs on one port)
            return Severity.INFO
        if _exception_alone(s) and (winner == "other" or not s.mapping_failure):
            # "ValueError: too many values to unpack" names no GPU failure, and a setting next
            # to it (a MIG slice, a docker run) does not make it one (review 55)
            return Severity.INFO
        if _context_only(winner, s, doc):
            return Severity.INFO  # a failure that points elsewhere; only context names the mapping
        if _one_process_failure(s, doc):
            return Severity.INFO
        return Severity.ERROR if decided else Severity.WARNING
    if doc is not None and not doc.failed:
        return Severity.INFO
    if _context_only(winner, s, doc, printed=False):
        return Severity.INFO  # failure words (of a failure outside the family, or of none) only
    return Severity.WARNING


def _one_process_failure(s: Scores, doc: DocFacts | None) -> bool:
    """A failure of one process, with no sign of a job of several (no launcher, DDP or rank
    named): "Expected all tensors to be on the same device" is one model spread over GPUs
    (device_map, a demo that puts parts on cuda:1), not ranks on the wrong GPUs (b23 dev); a
    PyTorch built without CUDA under a single script is an installation problem (b24 dev: a
    nanoGPT or detectron2 run on a CPU wheel). A possible cause at info."""
    if doc is None or doc.tells_several_processes() or doc.launch:
        return False
    placement = s.failure_class == "device-placement" and not s.failure
    return placement or "torch-cpu-build" in doc.hits


# Settings NCCL does not support in a multi-rank job: several ranks on MIG instances
# (reference/nccl.md (c): "not designed for that" before 2.32's experimental support) and machines
# that share one host identity (nccl.md (b): ranks taken for one host). A failure of the family
# next to them points at them. Containers, Slurm bindings, launcher options and visible-devices
# lists are supported settings, common in healthy jobs: they rank causes, they are none.
UNSUPPORTED_SETTINGS = frozenset({"mig", "host_identity"})


def _context_only(winner: str, s: Scores, doc: DocFacts | None, *, printed: bool = True) -> bool:
    """Whether a mapping category leads on context alone: no failure points at the mapping, and
    either a failure outside the family shows (an OOM, a data-loader crash, a network timeout: a
    MIG slice or a docker run next to it is a setting, not its cause), or no support names the
    cause (STRONG) and the setting is one NCCL supports (a watchdog timeout, or mere failure
    words, under a Slurm binding or a docker run). ``printed``: for the settings NCCL does not
    support, only an outside failure the job printed counts (next to a failure of the family);
    without one, one the reporter tells counts too."""
    if winner == "other" or s.mapping_failure:
        return False
    if winner in UNSUPPORTED_SETTINGS:  # ranks a generic failure, not one the job printed outside
        return s.outside_printed or _outside(doc, own=True, printed=printed)
    return _outside(doc, own=True) or s.strongest(winner) < STRONG


def _may_guess(top: tuple[str, float], s: Scores, doc: DocFacts | None) -> bool:
    """Whether the evidence allows a best guess at all.

    A failure of this family (a failure signal or a specific finding) always gets one, however
    weak: its priors and the context decide. Without one, context alone (a docker run, a
    CUDA_VISIBLE_DEVICES, a framework) is common in healthy setups and in failures of other
    kinds: with failure words the leader needs CONTEXT_GUESS points, without them one support
    of NO_FAILURE_GUESS; after a failure outside this family (an OOM, a network timeout, a
    Python exception) a support that names the cause (STRONG).
    """
    cat, pts = top
    if _shows_family_failure(s, doc):
        return pts >= WEAK_GUESS
    if _outside(doc):  # a failure class next to a failure outside the family: the outside one wins
        return pts >= MIN_GUESS and s.strongest(cat) >= STRONG
    if doc is not None and doc.failed:
        return pts >= CONTEXT_GUESS
    return pts >= NO_FAILURE_GUESS and s.strongest(cat) >= NO_FAILURE_GUESS


def _network_alone_is_info(out: list[Finding]) -> list[Finding]:
    """Rendezvous/socket errors (a port in use, an unreachable peer) with no other mapping
    finding above info are a network problem, not evidence of a mapping: info then."""
    alarms = [f for f in out if f.severity is not Severity.INFO and f.category != "other"]
    if not alarms or any(f.code not in NETWORK_CODES for f in alarms):
        return out
    return [replace(f, severity=Severity.INFO) if f.code in NETWORK_CODES else f for f in out]


def _demoted(f: Finding) -> Finding:
    """A symptom finding that does not name the cause follows the best guess as a warning."""
    if f.severity is Severity.ERROR and (f.code in SYMPTOM_CODES or UNDECIDED_MARK in f.detail):
        return replace(f, severity=Severity.WARNING)
    return f


# Causes that need a job of several processes: against one program's invalid ordinal (RM046)
# their priors say nothing; only a support that names the cause (STRONG) does.
SEVERAL_PROCESS_CAUSES = frozenset(
    {
        "oversubscribed",
        "no_set_device",
        "global_rank_as_device",
        "launcher_config",
        "host_identity",
    }
)


def _one_program_stays(lead: Finding, winner: str, s: Scores) -> bool:
    """One program's invalid ordinal (RM046) stays first against a cause of several processes
    that no support names."""
    return (
        lead.code == "RM046" and winner in SEVERAL_PROCESS_CAUSES and s.strongest(winner) < STRONG
    )


def _undecided_mapping(f: Finding) -> bool:
    """A failure of the mapping the log shows whose cause it cannot decide (RM102, RM103, one
    program's invalid ordinal RM046; of the ``other`` codes, those in OTHER_MAPPING_SYMPTOMS that
    carry the undecided mark)."""
    mapping = f.category != "other" or f.code in OTHER_MAPPING_SYMPTOMS
    return mapping and UNDECIDED_MARK in f.detail


def _decided_by_input(lead: Finding, s: Scores, cat: str) -> Finding:
    """A finding the log alone could not decide, with what decided it in the rest of the input
    (a GPU count the reporter states, a config, the launch): said and quoted (review 14)."""
    if UNDECIDED_MARK not in lead.detail:
        return lead
    quotes = [q for q in s.evidence.get(cat, ()) if q not in lead.evidence]
    return replace(
        lead,
        detail=f"{lead.detail} The rest of the input points to {cat}: {_support(s, cat)}.",
        evidence=(*lead.evidence, *quotes[:3]),
    )


def _support(s: Scores, cat: str, n: int = 4) -> str:
    best = sorted((r for r in s.reasons.get(cat, ()) if r[0] > 0), key=lambda r: -r[0])[:n]
    return "; ".join(f"+{p:g} {why}" for p, why in best)


def _guess_finding(
    cat: str,
    pts: float,
    runner: tuple[str, float] | None,
    margin: float,
    s: Scores,
    lead: Finding | None,
    severity: Severity,
    *,
    weak: bool = False,
) -> Finding:
    code = BEST_GUESS[cat]
    quotes = s.evidence.get(cat) or []
    top = quotes[0].split(": ", 1)[-1] if quotes else max(s.reasons[cat], key=lambda r: r[0])[1]
    detail = WEAK_NOTE if weak else ""
    detail += f"Support (score {pts:g}): {_support(s, cat)}."
    if runner:
        detail += f" Runner-up: {runner[0]} (score {runner[1]:g}): {_support(s, runner[0], 2)}."
    if weak or severity is Severity.WARNING or runner is None or margin < CLEAR_MARGIN:
        other = f" against {DECIDE[runner[0]]}" if runner else ""
        detail += f" What would decide: {DECIDE[cat]}{other}."
    # the rank map summary (RM042) names every rank seen, not the ranks of a cause
    keep = lead if lead is not None and lead.code not in NO_CAUSE else None
    ranks, devices = s.named
    return finding(
        code,
        f"{lookup(code).summary} (score {pts:g}"
        + (f" vs {runner[1]:g} {runner[0]})" if runner else ")")
        + f": {top[:100]}",
        detail=detail,
        ranks=keep.ranks if keep and keep.ranks else ranks,
        devices=keep.devices if keep and keep.devices else devices,
        hosts=keep.hosts if keep else (),
        evidence=(s.evidence.get(cat) or (list(keep.evidence) if keep else []))[:6],
        fix=s.fix_of(cat) or GENERAL_FIX.get(cat) or lookup(FIX_OF[cat]).fix,
        severity=severity,
    )


def _runner_finding(cat: str, pts: float, s: Scores) -> Finding:
    code = BEST_GUESS[cat]
    return finding(
        code,
        f"Also possible: {lookup(code).summary[len('Best-supported cause: ') :]} (score {pts:g})",
        detail=f"Support: {_support(s, cat, 3)}. Would decide: {DECIDE[cat]}.",
        evidence=s.evidence.get(cat, [])[:3],
        severity=Severity.INFO,
    )


def scores_section(s: Scores) -> dict[str, float]:
    """Points per category for the JSON ``explain.scores`` key."""
    return {c: round(p, 2) for c, p in s.ranked()}
