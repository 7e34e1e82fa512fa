"""Secondary signals in a log that tell causes apart (used by :mod:`rankmap.explain.causes`).

Each function returns a human reason (quoted into the finding) or ``None``. They read only
evidence and context; none of them looks at one thread's wording.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from rankmap.explain.collect import Evidence
from rankmap.explain.context import Context
from rankmap.explain.document import reads_as_prose
from rankmap.numbers import saturating_int

# Programs whose device choice is not a PyTorch script's: check's script rules do not apply.
NCCL_TESTS_SUFFIX = "_perf"


def is_nccl_tests(ctx: Context, ev: Evidence) -> bool:
    """The failing program is an nccl-tests binary (its own `-g`/local-rank logic)."""
    if ev.has("tests_device") or any(
        e.get("form") == "nccl-tests" for e in ev.of("invalid_ordinal", "cuda_failure")
    ):
        return True
    cmd = ctx.launch.command if ctx.launch else ""
    return any(tok.endswith(NCCL_TESTS_SUFFIX) for tok in cmd.split())


def subgroup_duplicate(ev: Evidence) -> str | None:
    """A duplicate-GPU pair reported by a global rank that is not in the pair.

    NCCL names communicator ranks; when ``[rankN]:`` (PyTorch's global rank) reports a pair
    without N, the communicator is a sub-group (device mesh, new_group). PyTorch creates a
    sub-group's NCCL communicator on the process's current CUDA device, so ranks that never
    called ``torch.cuda.set_device`` all create it on cuda:0 (pytorch_nccl.md, device guess).
    NOTE: the inference from "reporter not in pair" to "sub-group" is rankmap's, unverified.
    """
    for e in ev.of("duplicate_gpu"):
        reporter = e.prefix.rank
        if reporter is not None and reporter not in e.ranks:
            a, b = e.ranks
            return (
                f"global rank {reporter} reports communicator ranks {a} and {b}: the collision is "
                "in a sub-group, whose communicator PyTorch creates on the current CUDA device "
                "(cuda:0 unless the process called torch.cuda.set_device)"
            )
    return None


# A line printed by a Ray worker or actor: "(Worker pid=88, ip=10.0.0.5) ...",
# "(RayTrainWorker pid=12) ..." (Ray's log prefix).
_RAY_WORKER_LINE = re.compile(r"^\s*\(\w+ pid=\d+")


def logged_visible_list(ev: Evidence) -> list[str] | None:
    """The visible-devices list the log prints for the job, if it prints one list: a list a Ray
    worker prints is Ray's own (launchers.md §8), and lists that differ between the processes
    ("rank 1: CUDA_VISIBLE_DEVICES=1") are each process's own (:func:`per_process_lists`)."""
    cvds = [e for e in ev.of("env_cvd") if not _RAY_WORKER_LINE.match(e.line.text)]
    # (lists that differ are each process's own, MIG instances too: review 70)
    if not cvds or len({e.get("v") or "" for e in cvds}) > 1:
        return None
    return [x for x in (cvds[-1].get("v") or "").split(",") if x]


def per_process_lists(ev: Evidence) -> str | None:
    """Processes that print different visible-devices lists of one GPU each: a wrapper, a
    scheduler or a launcher gave every process its own GPU, which it sees as cuda:0
    (cuda_devices.md §1-2)."""
    values = list(dict.fromkeys(e.get("v") or "" for e in ev.of("env_cvd")))
    if len(values) < 2 or any("," in v or not v for v in values):
        return None
    if any(v.upper().startswith("MIG") for v in values):
        return None  # MIG instances, one per process: the MIG case (nccl.md (c)), not a GPU each
    return (
        f"the processes print different one-GPU visible lists ({', '.join(values[:4])}): each "
        "sees only its own GPU, as cuda:0"
    )


def physical_index_after_narrowing(ctx: Context, ev: Evidence) -> str | None:
    """CUDA_VISIBLE_DEVICES renumbers GPUs from 0; an entry >= the count is a physical index.

    With ``CUDA_VISIBLE_DEVICES=6,7`` the process sees cuda:0 and cuda:1 only
    (cuda_devices.md); a framework or script that then selects ``cuda:6`` gets
    ``invalid device ordinal``.
    """
    if ctx.visible_var() == "HIP_VISIBLE_DEVICES" and ctx.env.get("ROCR_VISIBLE_DEVICES"):
        return None  # HIP's list indexes the GPUs ROCR's left (visible_lists.hip_within_rocr)
    entries = ctx.cvd_entries()
    if entries is None:
        entries = logged_visible_list(ev)
    if not entries or not all(x.isdecimal() for x in entries):
        return None
    nums = [saturating_int(x) for x in entries]
    if max(nums) < len(nums):
        return None
    return (
        f"{ctx.visible_var()}={','.join(entries)} renumbers these GPUs cuda:0..{len(nums) - 1}; "
        f"selecting cuda:{max(nums)} (the physical index) is then an invalid device ordinal"
    )


def framework_local_rank_clash(ctx: Context, ev: Evidence) -> str | None:
    """More processes claim one local rank than there are nodes: local ranks were miscounted."""
    claims = Counter(e.get("local") for e in ev.of("framework_local_rank"))
    if not claims:
        return None
    local, count = claims.most_common(1)[0]
    nodes = ctx.launch.nnodes if ctx.launch and ctx.launch.nnodes else None
    if nodes is None and (ctx.env.get("SLURM_NNODES") or "").isdecimal():
        nodes = saturating_int(ctx.env["SLURM_NNODES"])
    nodes = nodes or 1
    if count <= nodes:
        return None
    return (
        f"{count} processes report LOCAL_RANK {local} on {nodes} node(s): the framework/launcher "
        "gave several processes of one node the same local rank"
    )


RAY_NOSET = "RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"


def ray_duplicate(ctx: Context, ev: Evidence) -> tuple[str, str] | None:
    """A duplicate-GPU WARN printed by a Ray worker: (candidate key, reason) or None.

    Ray sets each worker's CUDA_VISIBLE_DEVICES to its assigned GPUs; two workers on one GPU come
    from that assignment (duplicate reports with old Ray versions were fixed by upgrading Ray),
    unless ``RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES=1`` turned the masking off, where
    workers that default to cuda:0 collide (launchers.md §8).
    """
    if not any(e.prefix.ray for e in ev.of("duplicate_gpu")):
        return None
    if ctx.env.get(RAY_NOSET) == "1":
        return "RM301", f"{RAY_NOSET}=1: Ray no longer masks GPUs, workers default to cuda:0"
    return (
        "per_process",
        "the WARN comes from a Ray worker: Ray gives every worker its own CUDA_VISIBLE_DEVICES, "
        "so two workers on one GPU were assigned the same GPU (upgrade Ray; check num_gpus per "
        "worker)",
    )


def log_launch(ev: Evidence) -> str | None:
    """The last launch command line pasted with the log (the run the errors belong to)."""
    echoes = [e for e in ev.of("launch_echo") if not reads_as_prose(e.get("cmd") or "")]
    return echoes[-1].get("cmd") if echoes else None


def machine_gpu_count(indices: Sequence[str]) -> int | None:
    """The GPUs of a machine an nvidia-smi listing counts (``indices``: its rows' GPU indices):
    all of them where they are the table's first rows (0, 1, ...); rows cut out of a bigger
    table (GPU 5 alone) count no machine (review 72)."""
    n = len(indices)
    return n if n and set(indices) == {str(i) for i in range(n)} else None


def log_gpu_count(ev: Evidence) -> int | None:
    """GPUs per host in an nvidia-smi table pasted with the log (:func:`machine_gpu_count` of
    its distinct indices)."""
    return machine_gpu_count(sorted({str(e.get("idx")) for e in ev.of("smi_gpu")}))
