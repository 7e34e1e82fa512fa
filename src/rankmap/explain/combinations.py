"""Facts that only combinations of evidence show, scored (:mod:`rankmap.explain.scoring`).

A launch and a transport (several hosts, yet NCCL used P2P/IPC), a visible-devices list and a
symptom, an nvidia-smi process table, an IPC failure under per-task binding, a launcher that
ignores CUDA_VISIBLE_DEVICES, versions that differ between two places of the paste.
"""

from __future__ import annotations

import re

from rankmap.codes import lookup
from rankmap.explain.catalogue_stack import DEVICE_LIST_INDEX
from rankmap.explain.configs import config_points
from rankmap.explain.containers import (
    cleanenv_drops_the_binding,
    container_given_all,
    container_host_ids,
    container_host_numbered_list,
    container_sees_more,
    container_without_gpus,
)
from rankmap.explain.context import Context
from rankmap.explain.docread import DocFacts
from rankmap.explain.node_launches import node_launch_points
from rankmap.explain.printed_lists import printed_device_points, printed_list_points
from rankmap.explain.score_model import Scores
from rankmap.explain.versions import conflicts
from rankmap.explain.visible_lists import (
    container_list_outside,
    device_order_on_mixed_gpus,
    engine_above_gpus,
    hip_within_rocr,
    list_agent,
    list_not_applied,
    neighbours_on_many_gpus,
    one_listed_gpu_shared,
    writers_list,
)
from rankmap.findings import Finding

PT_SECTION = "reference/pytorch_nccl.md §1"


def from_combinations(ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
    """Facts that only combinations show (a launch and a transport, a list and a symptom)."""
    _transport_and_tables(ctx, doc, s)
    _nccl_on_windows(doc, s)
    _no_gpu_on_the_host(doc, s)
    _selection_variable_missing(doc, s)
    _other_users_memory(doc, s)
    _fractional_ray_workers(doc, s, base)
    _lists_and_ordinals(ctx, doc, s, base)
    nproc = ctx.launch.nproc_per_node if ctx.launch else None
    if nproc is None and doc is not None and one_machine_told(doc):
        nproc = doc.stated_procs  # "8 processes, 4 GPUs" told in prose, on one machine
    gpus = ctx.gpus_per_node() or (doc.smi_gpus or doc.stated_gpus if doc else None)
    if nproc and gpus and nproc > gpus:
        s.mapping_failure = True  # the stated launch cannot fit: a predicted failure
        told = doc is not None and not ctx.gpus_per_node() and not doc.smi_gpus
        s.add(
            "oversubscribed",
            4.0,
            f"{nproc} processes per node, {gpus} GPU(s) stated",
            doc.stated_gpus_at if told and doc else None,
        )
    elif nproc and gpus and nproc <= gpus and ctx.launch and not ctx.launch.nested_in:
        # the launch fits the GPUs: an ordinal or a shared GPU is not the class's usual cause
        # (the failure-class prior of oversubscribed, rankmap.explain.priors) here (review 22)
        s.add("oversubscribed", -3.0, f"{nproc} processes per node fit the {gpus} GPU(s)")
    _launch_cannot_fit(ctx, s, gpus)
    _launch_below_gpus(ctx, doc, s, nproc)
    _nested_launchers(ctx, s)
    _spawn_under_a_launcher(ctx, doc, s)
    _standalone_on_several_nodes(ctx, s)
    _launcher_and_binding(ctx, doc, s, base)
    _localhost_on_one_machine(ctx, doc, s)
    _duplicate_across_hosts(ctx, doc, s, base)
    _lightning_tasks(ctx, doc, s)
    _world_of_one(ctx, doc, s)
    _no_gpu_modulo(doc, s)
    _visible_below_parallelism(ctx, doc, s)
    _device_list_index(doc, s)
    _deepspeed_local_only(doc, s)
    list_not_applied(doc, s)
    container_list_outside(doc, s)
    device_order_on_mixed_gpus(doc, s)
    one_listed_gpu_shared(doc, s, base)
    neighbours_on_many_gpus(doc, s, base)
    hip_within_rocr(ctx, doc, s)
    engine_above_gpus(ctx, doc, s, one_machine=doc is not None and one_machine_told(doc))
    if doc is not None:
        for pts, why in conflicts(doc.versions):
            s.add("version_mismatch", pts, why)
        for cat, pts, why in config_points(doc.configs, nproc, gpus):
            s.add(cat, pts, why)
        # where a scheduler or framework gives each process its own list (Slurm's per-task
        # binding under cgroups prints CUDA_VISIBLE_DEVICES=0 in every task), the same one-GPU
        # list and "device 0" in every rank are what a correct job prints (review 57)
        agents = list_agent(doc) is not None
        distinct = any(len(set(v.values())) == len(v) > 1 for v in doc.rank_lists.values())
        # (Slurm's tasks may be bound one GPU each by cgroups: every task prints 0 there)
        scheduled = agents or "slurm-tasks" in doc.hits
        for cat, pts, why in printed_list_points(doc.rank_lists):
            if cat == "per_process_visible_devices" or not scheduled:
                s.add(cat, pts, why)
        if not (agents or distinct):
            for cat, pts, why in printed_device_points(doc.rank_devices):
                s.add(cat, pts, why)
        same = "same-command-every-node" in doc.hits
        for cat, pts, why in node_launch_points(doc.commands, doc.prompts, same_everywhere=same):
            s.add(cat, pts, why)
        container_sees_more(doc, s)
        container_given_all(doc, s)
        cleanenv_drops_the_binding(doc, s)
        container_without_gpus(doc, s)
        container_host_ids(doc, s)
        container_host_numbered_list(doc, s)


def _deepspeed_local_only(doc: DocFacts | None, s: Scores) -> None:
    """DeepSpeed's runner found no hostfile and started workers on this machine only, in a job
    the text calls multi-node: the launcher never reached the other nodes (reference/launchers.md
    §4, fetch_hostfile)."""
    if doc is not None and "ds-local-only" in doc.hits and "multi-node" in doc.hits:
        s.add(
            "launcher_config",
            3.0,
            "DeepSpeed found no hostfile and ran on local resources only, in a multi-node job",
        )


# Launchers that start one process per GPU (reference/launchers.md §1): fewer processes than GPUs
# leaves GPUs idle under them; mpirun / srun programs may drive several GPUs each.
_PER_GPU_LAUNCHERS = frozenset({"torchrun", "torch.distributed.launch", "accelerate", "deepspeed"})


def _no_gpu_on_the_host(doc: DocFacts | None, s: Scores) -> None:
    """ "No CUDA-capable device" on a host the writer says has no GPU (a CPU-only node): the
    program looked for a GPU where there is none; no list or container hid one (b26 dev)."""
    if doc is None or "cpu-only-host" not in doc.hits or "no-cuda-device" not in doc.hits:
        return
    s.take_back("no-cuda-device", "the host has no GPU: nothing hid one from the process")


_LOCAL_RANK_UNSET = re.compile(r"\bLOCAL_RANK['\"]?\s*[=:]\s*['\"<(]?(?:unset|not set)\b")


def _selection_variable_missing(doc: DocFacts | None, s: Scores) -> None:
    """Ranks that pile onto one GPU and print that the variable they select it by is unset
    ("LOCAL_RANK=unset" under mpirun): the launcher does not set it and every rank falls back to
    device 0 — the launcher's variables (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID; reference/
    launchers.md §9), not a missing set_device (review 70)."""
    hit = doc.hits.get("rank-env-missing") if doc else None
    # (the local rank's own variable printed unset; not MASTER_ADDR or WORLD_SIZE missing)
    if hit is None or not _LOCAL_RANK_UNSET.search(hit.excerpt):
        return
    if s.points.get("no_set_device", 0.0) <= 0:
        return
    s.add(
        "launcher_config",
        6.0,
        "every rank selects its GPU by a variable its launcher does not set, so each falls back "
        "to device 0 (reference/launchers.md §9)",
        f"{hit.where}: {hit.excerpt}",
    )
    s.add("no_set_device", -3.0, "the ranks do select a device, by a variable that is unset")
    s.name_fix(
        "launcher_config",
        6.0,
        "Read the local rank the launcher sets (mpirun: OMPI_COMM_WORLD_LOCAL_RANK; srun: "
        "SLURM_LOCALID), or start the ranks with torchrun, which sets LOCAL_RANK",
    )


def _other_users_memory(doc: DocFacts | None, s: Scores) -> None:
    """Memory on a GPU that the writer says another user's process holds: what the memory
    signals took for another rank of the job is not one (reviews 67, 73)."""
    if doc is None or "other-users-process" not in doc.hits:
        return
    for sid in ("vllm-memory-profiling", "gpu-held-by-another"):
        s.take_back(sid, "the other process on the GPU is another user's, not a rank")


def _nccl_on_windows(doc: DocFacts | None, s: Scores) -> None:
    """ "Distributed package doesn't have NCCL built in" on Windows is the platform, not a version
    to upgrade: PyTorch's Windows wheels carry gloo only (https://pytorch.org/docs/stable/
    distributed.html, Backends). The build message's version points move to ``other``."""
    if not doc or not {"nccl-not-built", "windows-host"} <= set(doc.hits):
        return
    moved = s.signal_points("version_mismatch", "nccl-not-built")
    s.add("version_mismatch", -moved, "on Windows no PyTorch build has NCCL: no version fixes it")
    s.add(
        "other",
        moved + 1.0,
        "NCCL is not built into PyTorch on Windows (its wheels carry gloo only): the job asked for "
        "a backend the platform does not have",
        doc.quoted("windows-host"),
    )
    s.name_fix(
        "other",
        moved + 1.0,
        "Use the gloo backend on Windows (`init_process_group(backend='gloo')`; Lightning: "
        "`DDPStrategy(process_group_backend='gloo')`), or run the job under Linux or WSL2, where "
        "PyTorch ships NCCL",
    )


def _fractional_ray_workers(doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
    """Ray workers that share a GPU because each asked for a fraction of one (`num_gpus=0.5`,
    `{"GPU": 0.5}`): Ray's assignment did what was asked (fractional GPUs share a device,
    https://docs.ray.io/en/latest/ray-core/scheduling/accelerators.html), so the per-worker
    lists are right and the job runs more NCCL ranks than GPUs (review 65)."""
    if not doc or "ray-fractional-gpu" not in doc.hits or not base or base[0].code != "RM503":
        return
    s.add(
        "per_process_visible_devices",
        -4.0,
        "Ray gave these workers the same GPU because each asked for a fraction of one: its "
        "assignment is what was requested",
    )
    s.add(
        "oversubscribed",
        5.0,
        "each worker requests a fraction of a GPU, so Ray places several NCCL ranks on one GPU "
        "(https://docs.ray.io/en/latest/ray-core/scheduling/accelerators.html); NCCL needs one GPU "
        "per rank",
        doc.quoted("ray-fractional-gpu"),
    )
    s.name_fix(
        "oversubscribed",
        5.0,
        "Request a whole GPU per NCCL worker (`num_gpus=1`, `resources_per_worker={'GPU': 1}`) "
        "and scale the data-loading with CPUs instead; fractional GPUs suit workers that do not "
        "join one NCCL communicator",
    )


def _standalone_on_several_nodes(ctx: Context, s: Scores) -> None:
    """torchrun --standalone in a launch over several nodes: --standalone makes each torchrun
    rendezvous on its own localhost with a fresh run id (torch/distributed/run.py: rdzv_backend
    c10d, rdzv_endpoint localhost:0, rdzv_id a new uuid), so every node runs a job of its own —
    the world never spans the nodes (review 65: `srun torchrun --standalone` on 2 nodes, both
    printing world_size=8 and writing the same checkpoint)."""
    launch = ctx.launch
    if launch is None or "--standalone" not in launch.command or (launch.nnodes or 0) < 2:
        return
    s.mapping_failure = True  # a launch that cannot form the job: what fails after it follows
    s.add(
        "launcher_config",
        6.0,
        f"torchrun --standalone on {launch.nnodes} nodes: each node rendezvouses on its own "
        "localhost, so each runs a separate job of its own processes, not one job over the nodes "
        "(torch/distributed/run.py --standalone)",
    )
    s.name_fix(
        "launcher_config",
        6.0,
        "Drop --standalone on more than one node and give every node the same rendezvous: "
        "`--nnodes N --rdzv-backend c10d --rdzv-endpoint $MASTER_ADDR:29500 --rdzv-id $JOB_ID` "
        "(under Slurm: MASTER_ADDR from the first host of `scontrol show hostnames`)",
    )


def _nested_launchers(ctx: Context, s: Scores) -> None:
    """srun / mpirun starting several tasks per node, each running torchrun (accelerate,
    deepspeed): the launch simulation's RM904 (one authority: launchers/slurm.py, mpi.py) — the
    processes multiply, and the agents of one node serve one rendezvous port. The simulation's
    other launch errors of the launcher family count too (RM920: torchrun told to wait for more
    nodes than the allocation starts; review 72)."""
    plan = ctx.launch.plan if ctx.launch else None
    for issue in plan.issues if plan else ():
        if issue.code == "RM904":
            s.mapping_failure = True
            s.add("launcher_config", 5.0, f"{issue.title}; the agents of a node serve one port")
            continue
        info = lookup(issue.code)
        severity = issue.severity or info.severity.value
        # (an issue that predicts what the job prints counts through those lines, which the
        # catalogue reads where they are printed; one without is the launch's own arithmetic)
        if info.category == "launcher_config" and severity == "error" and not issue.predicted:
            s.mapping_failure = True
            s.add(
                "launcher_config", 4.0, f"the launch simulated by check: {issue.code} {issue.title}"
            )
            if issue.fix:
                s.name_fix("launcher_config", 4.0, issue.fix)


def _spawn_under_a_launcher(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """Pasted code that starts its own workers (mp.spawn) under a launcher that starts several
    processes itself: every launched process spawns a full set, numbered from 0, so the workers
    multiply and collide on GPUs and ports (check's engine models the same for a script it
    reads: check/engine.py _spawn_in_every_process; review 73)."""
    launch = ctx.launch
    if doc is None or not doc.code_spawns or launch is None:
        return
    if launch.launcher not in _PER_GPU_LAUNCHERS or (launch.nproc_per_node or 0) < 2:
        return
    s.mapping_failure = True
    s.add(
        "launcher_config",
        5.0,
        f"{launch.launcher} starts {launch.nproc_per_node} processes per node and the pasted code "
        "calls mp.spawn in each: every process starts its own workers, numbered from 0",
    )
    s.name_fix(
        "launcher_config",
        5.0,
        f"Let one of them start the processes: under {launch.launcher}, drop mp.spawn and read "
        "LOCAL_RANK / RANK / WORLD_SIZE from the environment; or keep mp.spawn and start the "
        "script with plain python",
    )


def _one_gpu_symptom(doc: DocFacts) -> bool:
    """The job ran out of memory, or the reporter says one GPU is used: what GPUs left idle by
    a launch (or an engine) that asks for fewer than it may use show."""
    return bool({"outside-oom", "one-gpu-used"} & set(doc.hits))


def _launch_below_gpus(ctx: Context, doc: DocFacts | None, s: Scores, nproc: int | None) -> None:
    """A per-GPU launcher told to start fewer processes per node than the GPUs of one node it
    may use, in a job that runs out of memory or that the reporter says uses one GPU: the
    processes that run hold what was meant for all the GPUs (``--nproc_per_node 1`` on an
    8-GPU machine). Not where the GPUs are counted for several nodes, where a visible-devices
    list narrows them, or where one process drives several GPUs (``device_map="auto"``; review
    35)."""
    launch = ctx.launch
    if doc is None or launch is None:
        return
    # srun starting the program itself is one process per task (review 69: --ntasks-per-node=1
    # with --gpus-per-node=4, "only GPU 0 is busy on each node")
    own_tasks = launch.launcher == "srun" and launch.plan is not None and not launch.nested_in
    if launch.launcher not in _PER_GPU_LAUNCHERS and not own_tasks:
        return
    # one process per node is alone on its GPU 0: "everything on GPU 0" is that GPU in use
    alone_on_gpu0 = nproc == 1 and "all-on-gpu0" in doc.hits
    # a task of srun may drive every GPU of its node (JAX, TensorFlow): running out of memory
    # says nothing of idle GPUs there, only the reporter's "one GPU used" does (review 66)
    one_gpu = "one-gpu-used" in doc.hits if own_tasks else _one_gpu_symptom(doc)
    if not (one_gpu or alone_on_gpu0) or "single-process-multi-gpu" in doc.hits:
        return
    told = doc.stated_gpus if one_machine_told(doc) and (launch.nnodes or 1) == 1 else None
    gpus = ctx.gpus_per_node() or launch.gpus_per_node or doc.smi_gpus or told
    entries = ctx.cvd_entries()
    if gpus and entries:
        gpus = min(gpus, len(entries))
    if not (nproc and gpus and nproc < gpus):
        return
    s.failure = s.mapping_failure = True
    s.add(
        "launcher_config",
        3.0,
        f"the launch starts {nproc} process(es) per node on {gpus} GPU(s): the GPUs beyond "
        f"{nproc} stay idle and the work meant for them lands on the GPUs in use",
        doc.stated_gpus_at if gpus == told else None,
    )
    if alone_on_gpu0:  # one process per node has no other rank to pile onto its GPU 0
        s.add("no_set_device", -3.0, "one process per node: GPU 0 busy is the one GPU it uses")


_GLOBAL_INDEX = re.compile(
    r"task_index|task_id|process_id|process_index|global_rank|hvd\.rank\(\)|\brank\b|\bRANK\b|"
    r"get_rank\(\)|PROCID|COMM_WORLD_RANK"
)
_LOCAL_INDEX = re.compile(r"local|LOCAL|LOCALID")


def _device_list_index(doc: DocFacts | None, s: Scores) -> None:
    """A GPU list indexed by a rank and an IndexError: the framework's invalid device ordinal
    (TensorFlow's ``gpus[task_index]``, JAX's ``local_devices()[i]``; review 26). The index
    names the cause: a global index (task index, process id, rank) is the global rank; a local
    one that still fails leaves each process fewer GPUs than ranks on its node."""
    if doc is None or not {"device-list-indexed", "index-error"} <= set(doc.hits):
        return
    hit = doc.hits["device-list-indexed"]
    m = re.search(DEVICE_LIST_INDEX, hit.excerpt)
    index = m.group("idx") if m else ""
    s.failure = s.mapping_failure = True
    where = f"{hit.where}: {hit.excerpt}"
    why = f"`{index}` indexes the process's GPU list and the job stops with IndexError"
    if _LOCAL_INDEX.search(index):
        s.add("per_process_visible_devices", 3.0, f"{why}: each process sees fewer GPUs", where)
        s.add("oversubscribed", 2.0, f"{why}: more ranks than GPUs on the node", where)
    elif _GLOBAL_INDEX.search(index):
        s.add("global_rank_as_device", 4.0, f"{why}: a global index past one node's GPUs", where)
    else:
        s.add("oversubscribed", 2.0, why, where)
        s.add("visible_devices_mismatch", 1.0, why, where)


def _visible_below_parallelism(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """A visible-devices list shorter than the GPUs the command's engine asks for (tensor x
    pipeline x data parallel): it needs one GPU per rank and sees fewer (reference/cuda_devices.md
    §1). A size below the list, where one GPU runs out of memory or the reporter says one GPU is
    used, is the engine told to use fewer GPUs than it sees (reference/launchers.md §1)."""
    if doc is None:
        return
    pairs = [
        (v, size, len([e for e in v.split(",") if e.strip()])) for v, size in doc.parallel_visible
    ]
    short = next(((v, size) for v, size, count in pairs if size > count), None)
    if short is not None:
        s.mapping_failure = True
        s.add(
            "visible_devices_mismatch",
            3.0,
            f"CUDA_VISIBLE_DEVICES={short[0][:40]} leaves fewer GPUs than the {short[1]} the same "
            "command's parallel sizes ask for (reference/cuda_devices.md §1)",
        )
        return
    idle = next(((size, count) for _, size, count in pairs if size < count), None)
    if idle is not None and _one_gpu_symptom(doc):
        s.failure = s.mapping_failure = True  # the OOM of one GPU is the mapping's symptom
        s.add(
            "launcher_config",
            3.0,
            f"the command makes {idle[1]} GPUs visible and its parallel sizes use {idle[0]}: "
            f"the engine shards the model over {idle[0]} GPU(s) only, the others stay idle",
        )


def _no_gpu_modulo(doc: DocFacts | None, s: Scores) -> None:
    """``local_rank % torch.cuda.device_count()`` failing with a modulo by zero: the process
    sees no GPU at all (an empty or wrong CUDA_VISIBLE_DEVICES, a container without GPUs, a
    CPU-only build) — not a rank that selects no device (review 19)."""
    if doc is None or not {"modulo-by-zero", "device-count-call"} <= set(doc.hits):
        return
    s.failure = True
    why = "a modulo by torch.cuda.device_count() divided by zero: the process sees no GPU"
    quote = doc.quoted("modulo-by-zero")
    s.add("visible_devices_mismatch", 4.0, why + " (CUDA_VISIBLE_DEVICES empty or wrong)", quote)
    s.add("container_mapping", 2.0, why + " (a container given no GPU)", quote)
    s.add("version_mismatch", 2.0, why + " (a CPU-only build, or a driver CUDA cannot use)", quote)


def _world_of_one(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """A launch of several processes whose program reports a world of one: the processes do not
    form one job (an MPI of another implementation, a program without MPI, launches meant as
    one job; reference/launchers.md §6)."""
    if doc is not None and "mpi-singletons" in doc.hits and "all-on-gpu0" in doc.hits:
        s.add(
            "no_set_device",
            -3.0,
            "every process is rank 0 of a world of its own, so a device chosen by rank is 0 in "
            "all of them: the separate worlds explain the pile-up on GPU 0",
        )
    launch = ctx.launch
    if doc is None or "world-of-one" not in doc.hits or launch is None:
        return
    procs = (launch.nproc_per_node or 1) * (launch.nnodes or 1)
    if procs > 1:
        s.failure = True
        s.add(
            "launcher_config",
            5.0,
            f"the launch starts {procs} processes but the program reports a world of one: they "
            "are separate jobs of one process each (reference/launchers.md §6)",
            doc.quoted("world-of-one"),
        )


def one_machine_told(doc: DocFacts) -> bool:
    """A count of processes the text states is per machine only where it names one machine: an
    mpirun -np or a world of ranks spans every host, and an nccl-tests process drives its -g
    GPUs (https://github.com/NVIDIA/nccl-tests#usage)."""
    return (
        "multi-node" not in doc.hits
        and doc.hosts_in_launch <= 1
        and "nccl-tests" not in doc.frameworks
    )


def _launch_cannot_fit(ctx: Context, s: Scores, gpus: int | None) -> None:
    """A launch that starts more processes than the GPUs its own options leave them: the
    command predicts the failure itself (positive evidence, not context)."""
    launch = ctx.launch
    nproc = launch.nproc_per_node if launch else None
    if launch is None or not nproc:
        return
    per_task = launch.gpus_per_task
    if launch.launcher != "srun" and per_task and nproc > per_task:
        s.mapping_failure = True
        s.add(
            "per_process_visible_devices",
            3.0,
            f"each Slurm task sees {per_task} GPU(s) (--gpus-per-task) and {launch.launcher} starts "
            f"{nproc} processes in it (reference/launchers.md §5)",
        )
    entries = ctx.cvd_entries() if ctx.user_cvd() is not None else None
    if launch.launcher == "deepspeed" and _ds_selects(ctx):
        entries = None  # DeepSpeed then ignores the list (the launcher rule above says so)
    if launch.launcher == "srun":
        entries = None  # one process per task, and Slurm may set each task's list itself
    if entries and nproc > len(entries) and not ctx.machines and gpus != len(entries):
        s.mapping_failure = True
        s.add(
            "visible_devices_mismatch",
            3.0,
            f"{ctx.visible_var()}={','.join(entries)[:60]} leaves {len(entries)} GPU(s) to {nproc} "
            "processes per node (reference/cuda_devices.md §1)",
        )


# What shows more than one machine or container: only then can one hostname join two of them.
_SEVERAL_HOSTS = frozenset(
    {"multi-node", "two-pods-one-node", "docker-word", "docker-gpus", "inside-container",
     "k8s-gpu-resource", "device-plugin"}
)  # fmt: skip


def _localhost_on_one_machine(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """A hostname of localhost is a host-identity problem only where several machines or
    containers could share it (nccl.md (b)); on one machine with no container it is harmless."""
    if doc is None or "hostname-localhost" not in doc.hits:
        return
    nodes = max(ctx.launch.nnodes or 0 if ctx.launch else 0, doc.hosts_in_launch)
    if nodes >= 2 or _SEVERAL_HOSTS & set(doc.hits):
        return
    weight = dict(doc.hits["hostname-localhost"].signal.supports).get("host_identity", 0.0)
    s.add(
        "host_identity",
        -weight,
        "one machine and no container in the input: a hostname of localhost joins nothing "
        "(reference/nccl.md (b))",
    )


# Finding codes of ranks sharing one GPU (the duplicate-GPU causes and their symptom RM103).
_SHARED_GPU = frozenset({"RM103", "RM101", "RM201", "RM301", "RM302", "RM401", "RM601", "RM801",
                         "RM503", "RM904"})  # fmt: skip
# What gives machines one name: a container on the host network or given a hostname, a hostname
# of localhost, the same hostname said outright.
_ONE_NAME = frozenset({"host-network", "hostname-localhost", "same-hostname"})


def _duplicate_across_hosts(
    ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]
) -> None:
    """Ranks on one GPU in a job of several machines: NCCL compares GPUs only among ranks of one
    host hash (reference/nccl.md (b)), so with one process per machine the pair is on two
    machines taken for one; with several, a name the machines share makes it likely."""
    if not base or base[0].code not in _SHARED_GPU:
        return
    launch = ctx.launch
    nodes = max(launch.nnodes or 0 if launch else 0, doc.hosts_in_launch if doc else 0)
    # a launch line that could not be simulated (no script named) still says its counts
    per_node = (
        (doc.slots_per_host if doc else None)
        or (launch.nproc_per_node if launch else None)
        or (doc.stated_procs if doc else None)
    )
    if per_node == 1 and nodes >= 2:
        s.add(
            "host_identity",
            5.0,
            f"one process per machine on {nodes} machines, yet two ranks on one GPU: NCCL took "
            "two machines for one host (reference/nccl.md (b))",
        )
        return
    several = nodes >= 2 or bool(doc and "multi-node" in doc.hits)
    named = sorted(_ONE_NAME & set(doc.hits)) if doc else []
    if several and named:
        s.add(
            "host_identity",
            # the same name said outright (not only a setting that may give one): as strong as
            # one process per machine (reviews 49, 51)
            5.0 if "same-hostname" in named else 3.0,
            f"ranks on one GPU in a job of several machines that may share one name ({named[0]}): "
            "NCCL compares GPUs among ranks of one host hash (reference/nccl.md (b))",
            doc.quoted(named[0]) if doc else None,
        )


def _lightning_tasks(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """Lightning under Slurm runs one process per task: ``devices=N`` must equal the tasks per
    node (reference/launchers.md §7, SLURMEnvironment), or the job waits for processes that
    never start (or indexes GPUs a task cannot see)."""
    launch = ctx.launch
    devices = doc.lightning_devices if doc else None
    if not (devices and launch and launch.launcher == "srun" and launch.nproc_per_node):
        return
    if launch.nproc_per_node != devices:
        s.mapping_failure = True  # the launch cannot start the processes Lightning waits for
        s.add(
            "launcher_config",
            4.0,
            f"Lightning devices={devices} under srun with {launch.nproc_per_node} task(s) per node: "
            "Lightning runs one process per Slurm task, so --ntasks-per-node must equal devices "
            "(reference/launchers.md §7)",
        )


def _transport_and_tables(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """Several hosts yet an intra-host transport; nvidia-smi process tables."""
    if doc and doc.hosts_in_launch >= 2 and "p2p-ipc" in doc.hits and _one_rank_per_node(ctx, doc):
        s.add(
            "host_identity",
            5.0,
            f"the launch names {doc.hosts_in_launch} hosts, yet NCCL connected ranks through an "
            "intra-host transport (P2P/IPC or SHM): it took them for one host",
            doc.hits["p2p-ipc"].where + ": " + doc.hits["p2p-ipc"].excerpt,
        )
    if doc and (merged := _nodes_merged(ctx, doc) or _mpi_hosts_merged(ctx, doc)):
        s.add("host_identity", 5.0, merged)
    if doc and doc.gpu0_extra:
        s.mapping_failure = True  # a process on GPU 0 and on its own GPU: an observed state
        s.add(
            "no_set_device",
            5.0,
            f"nvidia-smi: {doc.gpu0_extra}: it created a CUDA context on cuda:0 before (or "
            f"without) selecting its own device ({PT_SECTION})",
            doc.gpu0_quote,
        )
    if doc and doc.every_gpu and not doc.gpu0_extra:
        s.mapping_failure = True  # an observed state, like a process on GPU 0 and its own
        s.add(
            "no_set_device",
            5.0,
            f"nvidia-smi: {doc.every_gpu}: no process selected a GPU of its own ({PT_SECTION}; "
            "TensorFlow maps memory on every GPU it sees, https://www.tensorflow.org/guide/gpu; "
            "JAX uses every local GPU unless local_device_ids is given, "
            "https://docs.jax.dev/en/latest/_autosummary/jax.distributed.initialize.html)",
            doc.every_gpu_quote,
        )
    if doc and doc.shared_gpu and not doc.gpu0_extra:
        s.failure = s.mapping_failure = True  # several processes on one GPU: this family's symptom
        for cat, pts in (
            ("no_set_device", 2.0),
            ("oversubscribed", 1.0),
            ("container_mapping", 1.0),
        ):
            s.add(cat, pts, f"{doc.shared_gpu} (several ranks on one GPU)")


def _nodes_merged(ctx: Context, doc: DocFacts) -> str | None:
    """NCCL's ``nNodes 1 localRanks 16`` for a launch over two nodes of 8: it took the nodes for
    one host (reference/nccl.md (b): ranks of one host hash are one node); None otherwise."""
    nodes = max(ctx.launch.nnodes or 0 if ctx.launch else 0, doc.hosts_in_launch)
    nproc = ctx.launch.nproc_per_node if ctx.launch else doc.stated_procs
    if not nodes and doc.stated_machines >= 2 and not nproc:
        # "2 machines, 8 GPUs each": the prose's count, with the GPUs it gives one machine
        nodes, nproc = doc.stated_machines, doc.stated_gpus
        if not nproc and doc.local_ranks >= nodes:
            # "two different servers": NCCL's one node holds every rank of the job
            nproc = doc.local_ranks // nodes
    if doc.nccl_nodes != 1 or nodes < 2 or not nproc or doc.local_ranks <= nproc:
        return None
    return (
        f"NCCL counted one node with {doc.local_ranks} local ranks (nNodes 1) for a job over "
        f"{nodes} machines of {nproc} process(es) each: it took the machines for one host"
    )


def _mpi_hosts_merged(ctx: Context, doc: DocFacts) -> str | None:
    """DeepSpeed's MPI discovery printed a local rank at least the GPUs of one machine (stated,
    in an nvidia-smi table, or the processes per node of the launch), in a job bigger than that:
    it counts local ranks per host name (deepspeed/comm/comm.py ``mpi_discovery``, "assuming
    hostnames are unique"), so machines that share one hostname count as one (review 59)."""
    local, world = doc.mpi_local
    machines = max(doc.hosts_in_launch, ctx.launch.nnodes or 0 if ctx.launch else 0)
    if machines < 2 and "multi-node" not in doc.hits:
        return None  # one machine: a local rank past its GPUs is more processes than GPUs
    # (or the slots an MPI host list gives each host: "-H a:4,b:4", review 69)
    per_node = ctx.gpus_per_node() or doc.smi_gpus or doc.stated_gpus or doc.slots_per_host
    if per_node is None and ctx.launch and ctx.launch.nproc_per_node:
        per_node = ctx.launch.nproc_per_node
    if not per_node or local < per_node or world <= per_node:
        return None
    return (
        f"DeepSpeed's MPI discovery gave a process local_rank={local} in a {world}-process job "
        f"on machines of {per_node} GPUs: it counts local ranks per host name, so the machines "
        "share one hostname (deepspeed/comm/comm.py mpi_discovery)"
    )


def _one_rank_per_node(ctx: Context, doc: DocFacts) -> bool:
    """Whether each host runs a single rank, so that a P2P/IPC or SHM connection between two
    ranks can only join ranks of different hosts: with several ranks per node (the launch's
    processes per node, NCCL's ``localRanks``) the intra-host transport is expected."""
    nproc = ctx.launch.nproc_per_node if ctx.launch else None
    # positive evidence only: a launch of one process per node, or NCCL's "localRanks 1"; an
    # unknown count is no single rank (review 66: rank 0 -> 1 via P2P/IPC on one host of a
    # 2-node job read as two hosts taken for one)
    return (nproc == 1 and doc.local_ranks <= 1) or (nproc is None and doc.local_ranks == 1)


def _lists_and_ordinals(ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
    """A visible-devices list against the symptom (an invalid ordinal, ranks on one GPU)."""
    machine_gpus = doc and (doc.smi_gpus or doc.stated_gpus)
    if doc and machine_gpus and doc.visible_range >= max(2, machine_gpus):
        s.add(
            "per_process_visible_devices",
            -3.0,
            f"the failing process saw {doc.visible_range} devices (XLA's valid range), as many as "
            "its machine has: no per-process list narrowed it (reference/cuda_devices.md §1)",
        )
    if doc and {"cvd-ignored", "scheduler-sets-cvd"} <= set(doc.hits):
        s.add(
            "per_process_visible_devices",
            2.0,
            "the list that is replaced is the one the scheduler set for the job or task: code "
            "that overwrites CUDA_VISIBLE_DEVICES discards the scheduler's assignment "
            "(reference/launchers.md §5, cuda_devices.md §1)",
            doc.quoted("scheduler-sets-cvd"),
        )
    if doc and "cvd-ignored" in doc.hits and {"docker-gpus", "docker-word"} & set(doc.hits):
        s.add(
            "container_mapping",
            4.0,
            "CUDA_VISIBLE_DEVICES does not reach the container: the container runtime decides which "
            "GPUs it sees (reference/cuda_devices.md §3)",
        )
    if doc and "cvd-assigned" in doc.hits and ({"same-gpu", "all-on-gpu0"} & set(doc.hits)):
        if "scheduler-sets-cvd" in doc.hits:  # the scheduler's per-task lists, not the user's
            s.add(
                "per_process_visible_devices",
                4.0,
                "the scheduler sets each task's CUDA_VISIBLE_DEVICES and yet the tasks end up on "
                "one GPU: every task was given the same list (reference/launchers.md §5)",
                doc.quoted("scheduler-sets-cvd"),
            )
        elif len(writers_list(doc)) < 2:
            # (a list of several GPUs leaves each process a choice: processes that all take the
            # first made none, b26 dev: "CUDA_VISIBLE_DEVICES=0,...,7 ... all on the same card")
            s.add(
                "visible_devices_mismatch",
                4.0,
                "CUDA_VISIBLE_DEVICES was narrowed and yet the ranks end up on one GPU: the list "
                "is indexed inconsistently (reference/cuda_devices.md §1)",
            )
    # an invalid device: the ordinal finding, or the message in any stack's wording (the class)
    ordinal = any(f.code in ("RM102", "RM240", "RM501", "RM401") for f in base[:1]) or bool(
        doc and "invalid-device-any" in doc.hits
    )
    narrowed = ctx.cvd_entries()
    fits = ctx.visible_fits_launch()
    told = doc is not None and one_machine_told(doc)
    machine = ctx.gpus_per_node() or ((doc.smi_gpus or doc.stated_gpus) if doc and told else None)
    if ordinal and narrowed and all(e.isdecimal() for e in narrowed) and not fits:
        if machine and len(narrowed) > machine:
            # the list names more GPUs than the machine has: a launch copied from a bigger
            # machine (review 73: "--gpus 0,...,7" on 4 V100s), not an index past the list
            s.add(
                "oversubscribed",
                3.0,
                f"an invalid device ordinal with {ctx.visible_var()}={','.join(narrowed)}: it "
                f"lists {len(narrowed)} GPUs on a machine of {machine}, so the processes past "
                f"{machine} have no GPU",
            )
        else:
            s.add(
                "visible_devices_mismatch",
                2.0,
                f"an invalid device ordinal with {ctx.visible_var()}={','.join(narrowed)}: the "
                f"index used is outside the {len(narrowed)} GPU(s) it leaves visible "
                "(cuda_devices.md §1)",
            )
    if ordinal:
        for sid, pts, why in _per_process_ordinals(ctx, doc):
            s.add("per_process_visible_devices", pts, why, doc.quoted(sid) if doc and sid else None)
    nodes = max(ctx.launch.nnodes or 0 if ctx.launch else 0, doc.hosts_in_launch if doc else 0)
    # code that selects the local rank (pasted or --script) says the index is no global rank
    by_local = bool({ctx.selection(), doc.code_kind if doc else None} & _LOCAL_SELECTIONS)
    # ... and so does the selecting line of a traceback (`set_device(hvd.local_rank())`)
    by_local = by_local or bool(doc and "local-rank-as-device" in doc.hits)
    # nccl-tests counts its local rank by hostname, never the global rank (review 26)
    by_local = by_local or bool(doc and "nccl-tests" in doc.frameworks)
    # nodes that share one host, IP or hostname: a local rank counted by host over both runs
    # past the GPUs too (reference/nccl.md (b))
    by_local = by_local or bool(doc and {"nodes-share-host", "same-hostname"} & set(doc.hits))
    if ordinal and (nodes >= 2 or (doc and "multi-node" in doc.hits)) and not by_local:
        how = f"the launch names {nodes} nodes" if nodes >= 2 else "a multi-node run"
        s.add(
            "global_rank_as_device",
            3.0,
            f"an invalid device ordinal and {how}: an index that exists on one node only is the "
            f"global rank ({PT_SECTION}; reference/launchers.md §1)",
        )


_LOCAL_SELECTIONS = frozenset({"local_rank", "local_rank_modulo", "accelerate"})


def _launcher_and_binding(
    ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]
) -> None:
    """Launchers that set CUDA_VISIBLE_DEVICES themselves, per-task binding and IPC, a device
    count that changed after CUDA initialised."""
    if doc is None:
        return
    hits = doc.hits
    launcher = ctx.launch.launcher if ctx.launch else None
    deepspeed = launcher == "deepspeed" or "deepspeed-include" in hits
    if "cvd-ignored" in hits and deepspeed and not {"docker-gpus", "docker-word"} & set(hits):
        s.add(
            "launcher_config",
            4.0,
            "CUDA_VISIBLE_DEVICES is ignored under the DeepSpeed launcher: with --num_gpus, "
            "--include/--exclude or a hostfile it sets CUDA_VISIBLE_DEVICES itself "
            "(reference/launchers.md §4, CVD interplay)",
            doc.quoted("cvd-ignored"),
        )
        s.add("visible_devices_mismatch", -2.0, "the ignored list is the launcher's doing")
    if deepspeed and ctx.user_cvd() and _ds_selects(ctx):
        s.add(
            "launcher_config",
            3.5,  # below a guess on its own in a healthy log (scoring.NO_FAILURE_GUESS)
            "CUDA_VISIBLE_DEVICES is set and the DeepSpeed launcher is given --num_gpus/"
            "--num_nodes/--include/--exclude/a hostfile: it then ignores CVD and picks the GPUs "
            "itself (reference/launchers.md §4, CVD interplay)",
        )
    _list_of_an_agent(doc, s)
    per_task = _binding_in_effect(ctx, doc)
    per_worker = per_task or "ray" in hits or "ray-named" in hits
    # in a report of a failure, or printed: not IPC named in the sentences of a question about a
    # job that works ("I read that per-task binding can disable CUDA IPC"; review 36)
    ipc = next(
        (
            k
            for k in ("cuda-ipc", "peer-access", "nccl-cuda-failure")
            if k in hits and (doc.failed or hits[k].segment != "prose")
        ),
        None,
    )
    named = doc.cuda_error_named  # "Cuda failure 'out of memory'": its own cause
    if ipc and per_worker and not named and not doc.shows_outside(own=True):
        s.mapping_failure = True  # the failure is explained by the binding: a mapping failure
        who = "per-task GPU binding" if per_task else "Ray's per-worker CUDA_VISIBLE_DEVICES"
        s.add(
            "per_process_visible_devices",
            3.0,
            f"a CUDA IPC / peer-access failure (or a CUDA call failing inside NCCL) under {who}: "
            "each process sees only its own GPU, so NCCL cannot reach the peer's GPU "
            "(reference/launchers.md §5, §8, cuda_devices.md §1)",
            doc.quoted(ipc),
        )
    if "cvd-after-init" in hits and any(f.code == "RM640" for f in base):
        s.add(
            "visible_devices_mismatch",
            5.0,
            "the device < num_gpus assert follows a CUDA_VISIBLE_DEVICES change after CUDA "
            "initialised (reference/cuda_devices.md §1); MIG is not needed to explain it",
            doc.quoted("cvd-after-init"),
        )


def _list_of_an_agent(doc: DocFacts, s: Scores) -> None:
    """A visible-devices list, or a report that a process uses the wrong GPU, in a job whose
    processes get their list from a framework or a scheduler (``visible_lists.LIST_AGENTS``):
    the list is more likely that agent's than the user's. It ranks the causes of a failure; next
    to none it is context only (two settings make no alarm)."""
    if not (s.failure or (s.weak_failure and not doc.shows_outside())):
        return  # no failure, or only a generic one next to a failure outside the family
    agent = list_agent(doc)
    if agent and {"cvd-mentioned", "hip-visible", "device-selection-problem"} & set(doc.hits):
        s.add(
            "per_process_visible_devices",
            1.5,
            f"a visible-devices list or a wrong GPU in a job whose processes get their list from "
            f"{agent} "
            "(per-process lists: reference/launchers.md §5, dask-cuda and JAX documentation)",
            doc.quoted(agent),
        )


def _binding_in_effect(ctx: Context, doc: DocFacts) -> bool:
    """Per-task GPU binding in the launch, a script or a log (not a sentence that mentions it:
    "we tried --gpus-per-task once")."""
    hit = doc.hits.get("gpus-per-task")
    return bool(ctx.launch and ctx.launch.gpus_per_task == 1) or (
        hit is not None and hit.segment != "prose"
    )


# An invalid device ordinal inside processes whose visible list a scheduler or framework set:
# (the hit to quote, points, why).
_SLURM_ORDINAL = (
    "an invalid device ordinal from tasks that Slurm started and that select their device by the "
    "local rank: with per-task GPU binding each task sees only its own GPU, so local rank >= 1 is "
    "out of range (reference/launchers.md §5, typical Slurm misconfigurations)"
)
_RAY_ORDINAL = (
    "an invalid device ordinal inside Ray workers: Ray sets each worker's CUDA_VISIBLE_DEVICES to "
    "the GPUs it was given (num_gpus), so an index >= that count is out of range "
    "(reference/launchers.md §8)"
)


def _per_process_ordinals(
    ctx: Context, doc: DocFacts | None
) -> list[tuple[str | None, float, str]]:
    out: list[tuple[str | None, float, str]] = []
    if _slurm_tasks_by_local_rank(ctx, doc):
        out.append((None, 2.5, _SLURM_ORDINAL))
    ray = next((k for k in ("ray", "ray-named") if doc and k in doc.hits), None)
    # (not where the code indexes by the world rank: that index fails on every node but the
    # first whatever list Ray gives, and Ray Train shares one list per node; review 68)
    if ray and ctx.selection() != "global_rank":
        out.append((ray, 2.5, _RAY_ORDINAL))
    return out


def _slurm_tasks_by_local_rank(ctx: Context, doc: DocFacts | None) -> bool:
    slurm = bool(ctx.launch and ctx.launch.launcher == "srun") or bool(
        doc and "slurm-tasks" in doc.hits
    )
    by_local = ctx.selection() == "local_rank" or bool(
        doc and ("local-rank-as-device" in doc.hits or doc.code_kind == "local_rank")
    )
    # one Slurm task per node that runs a launcher (srun -n1 torchrun ...): the ranks are the
    # launcher's children in that one task, not tasks bound one GPU each (review 66)
    one_task_launcher = bool(
        ctx.launch and ctx.launch.nested_in == "srun" and ctx.launch.outer_tasks_per_node == 1
    )
    return slurm and by_local and not one_task_launcher


_DS_SELECT = ("--num_gpus", "--num_accelerators", "--num_nodes", "--include", "--exclude", "-i ",
              "-e ", "--hostfile", "-H ")  # fmt: skip


def _ds_selects(ctx: Context) -> bool:
    """The DeepSpeed launch passes one of the options that make it ignore CVD."""
    cmd = f" {ctx.launch.command} " if ctx.launch else ""
    return any(f" {opt}" in cmd or f" {opt.strip()}=" in cmd for opt in _DS_SELECT)
