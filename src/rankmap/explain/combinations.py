"""Facts that only combinations of evidence show, scored (:mod:`rankmap.explain.scoring`).

A launch and a transport (several hosts, yet NCCL used P2P/IPC), a visible-devices list and a
symptom, an nvidia-smi process table, an IPC failure under per-task binding, a launcher that
ignores CUDA_VISIBLE_DEVICES, versions that differ between two places of the paste. The rules
live by subject: the hosts (:mod:`~rankmap.explain.combinations_hosts`), the launch
(:mod:`~rankmap.explain.combinations_launch`), visible lists and ordinals
(:mod:`~rankmap.explain.combinations_lists`), the machine's platform
(:mod:`~rankmap.explain.combinations_platform`); this module runs them in one order and keeps the
rules that read the paste alone.
"""

from __future__ import annotations

import re

from rankmap.explain.combinations_hosts import (
    duplicate_across_hosts,
    localhost_on_one_machine,
    transport_and_tables,
)
from rankmap.explain.combinations_launch import (
    launch_below_gpus,
    launch_cannot_fit,
    lightning_tasks,
    nested_launchers,
    one_machine_told,
    spawn_under_a_launcher,
    standalone_on_several_nodes,
    world_of_one,
)
from rankmap.explain.combinations_lists import (
    device_list_index,
    launcher_and_binding,
    list_starts_no_processes,
    lists_and_ordinals,
    no_gpu_modulo,
    visible_below_parallelism,
)
from rankmap.explain.combinations_platform import (
    nccl_missing_on_linux,
    nccl_on_windows,
    no_gpu_on_the_host,
    npu_stack,
)
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
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.node_launches import NODE_RANK_FIX, node_launch_points
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
)
from rankmap.findings import Finding


def _spawned_workers(ctx: Context, doc: DocFacts | None) -> int | None:
    """The workers pasted code starts with ``mp.spawn(fn, nprocs=K)`` (K read by check's
    analysis) under a plain ``python`` launch or none: all of them on the machine it runs on
    (check/engine.py: the spawn index is the local rank)."""
    if doc is None or not doc.code_spawns or not doc.spawn_count:
        return None
    launch = ctx.launch
    if launch is not None and (launch.launcher != "python" or (launch.nproc_per_node or 1) > 1):
        return None
    return doc.spawn_count


def from_combinations(ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
    """Facts that only combinations show (a launch and a transport, a list and a symptom)."""
    transport_and_tables(ctx, doc, s)
    nccl_on_windows(doc, s)
    nccl_missing_on_linux(doc, s)
    npu_stack(doc, s)
    _jax_local_id(ctx, doc, s)
    _failure_of_a_reported_job(doc, s)
    no_gpu_on_the_host(doc, s)
    _selection_variable_missing(doc, s)
    _other_users_memory(doc, s)
    _fractional_ray_workers(doc, s, base)
    lists_and_ordinals(ctx, doc, s, base)
    nproc = ctx.launch.nproc_per_node if ctx.launch else None
    if nproc is None and doc is not None and one_machine_told(doc):
        nproc = doc.stated_procs  # "8 processes, 4 GPUs" told in prose, on one machine
    spawned = _spawned_workers(ctx, doc)
    nproc = spawned or nproc
    gpus = ctx.gpus_per_node() or (doc.smi_gpus or doc.stated_gpus if doc else None)
    if nproc and gpus and nproc > gpus:
        s.mapping_failure = True  # the stated launch cannot fit: a predicted failure
        told = doc is not None and not ctx.gpus_per_node() and not doc.smi_gpus
        started = "workers the pasted code spawns (mp.spawn nprocs)" if spawned else "processes"
        s.add(
            "oversubscribed",
            4.0,
            f"{nproc} {started} per node, {gpus} GPU(s) stated",
            doc.stated_gpus_at if told and doc else None,
        )
    elif nproc and gpus and nproc <= gpus and ctx.launch and not ctx.launch.nested_in:
        # the launch fits the GPUs: an ordinal or a shared GPU is not the class's usual cause
        # (the failure-class prior of oversubscribed, rankmap.explain.priors) here (review 22)
        s.add("oversubscribed", -3.0, f"{nproc} processes per node fit the {gpus} GPU(s)")
    launch_cannot_fit(ctx, s, gpus)
    launch_below_gpus(ctx, doc, s, nproc)
    nested_launchers(ctx, s)
    spawn_under_a_launcher(ctx, doc, s)
    standalone_on_several_nodes(ctx, s)
    launcher_and_binding(ctx, doc, s, base)
    localhost_on_one_machine(ctx, doc, s)
    duplicate_across_hosts(ctx, doc, s, base)
    lightning_tasks(ctx, doc, s)
    world_of_one(ctx, doc, s)
    no_gpu_modulo(doc, s)
    visible_below_parallelism(ctx, doc, s)
    device_list_index(doc, s)
    list_starts_no_processes(ctx, doc, s)
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
            if cat == "host_identity":  # (the node-rank readings are its only ones there)
                s.name_fix(cat, pts, NODE_RANK_FIX)
        container_sees_more(doc, s)
        container_given_all(doc, s)
        cleanenv_drops_the_binding(doc, s)
        container_without_gpus(doc, s)
        container_host_ids(doc, s)
        container_host_numbered_list(doc, s)


def _failure_of_a_reported_job(doc: DocFacts | None, s: Scores) -> None:
    """A failure of this family in a job of several processes that the writer describes (a
    launcher, DDP, LOCAL_RANK named outside the job's own log lines), with nothing that names a
    cause: the launch's set-up is the most common one (launcher_config in 18 of the 39 such
    failures of the b21-b26 dev part; reference/launchers.md §1-§6 list each launcher's own).
    Half a point: below anything that names a cause, and no more than a possible cause at info
    on its own. Not for a job's log alone (torchrun's "failed (exitcode: 1)" summary names no
    cause) nor next to a failure outside the family."""
    hit = doc.hits.get("multi-process-job") if doc else None
    if doc is None or hit is None or hit.segment == "log" or doc.shows_outside():
        return
    if not (s.failure or s.weak_failure or doc.failed):
        return
    s.add(
        "launcher_config",
        0.5,
        f"[multi-process-job] `{hit.excerpt[:100]}`: a failure in a job of several processes, "
        "most often the launch's set-up (reference/launchers.md §1)",
        doc.quoted("multi-process-job"),
    )


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


def _jax_local_id(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """JAX's process_id set to a local rank in a job over several machines: every node has a
    process 0, so two hosts register the same task (review 72). On one machine the local rank
    is the global one."""
    if doc is None or "jax-process-id-local" not in doc.hits:
        return
    machines = max(doc.machines_told(), ctx.launch.nnodes or 0 if ctx.launch else 0)
    if machines < 2:
        return
    s.add(
        "launcher_config",
        5.0,
        f"JAX's process_id is a local rank in a job over {machines} machines: it repeats on every "
        "node, so two hosts claim the same process id (jax.distributed.initialize)",
        doc.quoted("jax-process-id-local"),
    )
    s.name_fix(
        "launcher_config",
        5.0,
        "Pass the job-wide index as process_id (SLURM_PROCID, RANK, OMPI_COMM_WORLD_RANK), or "
        "call jax.distributed.initialize() without arguments under Slurm/Open MPI, which reads "
        "them itself",
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
