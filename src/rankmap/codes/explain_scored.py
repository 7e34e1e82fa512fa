"""Codes of ``explain``'s scored best guess: one per category (sub-range x45 of each hundred).

A best guess is the category with the most support over every signal of the input (the signal
catalogue, the launch simulation, the script analysis, the context) when no specific rule of
``explain`` decided; its detail quotes the reasons, the runners-up and what would decide.
"""

from __future__ import annotations

from rankmap.codes.registry import define

_DECIDE = (
    "Run the command the finding's 'What would decide' names and pass its output (or the "
    "launch command, --env, --machine, --script) to `rankmap explain` again."
)
_BEST_GUESS: tuple[tuple[str, str, str, str], ...] = (
    (
        "RM045",
        "other",
        "a GPU/NCCL problem of this family outside the mapping categories",
        "GPU peer access, IPC, extra memory on GPU 0 from loading, or an NCCL transport problem.",
    ),
    (
        "RM055",
        "version_mismatch",
        "CUDA / driver / NCCL / architecture versions do not fit",
        "The binaries lack code for the GPU's architecture, or the driver is older than the CUDA "
        "runtime, or nodes load different NCCL builds.",
    ),
    (
        "RM145",
        "oversubscribed",
        "more processes than GPUs",
        "More processes per node than GPUs they can see.",
    ),
    (
        "RM245",
        "visible_devices_mismatch",
        "CUDA_VISIBLE_DEVICES (or its HIP/TF twin) does not fit the job",
        "The visible-devices list narrows, reorders or names GPUs (UUIDs) in a way "
        "the launcher or framework does not expect.",
    ),
    (
        "RM345",
        "no_set_device",
        "ranks never select their own GPU",
        "No set_device / a bare 'cuda' device: every rank works on cuda:0.",
    ),
    (
        "RM445",
        "global_rank_as_device",
        "the global rank is used as the device index",
        "RANK (or a process index) where LOCAL_RANK belongs: ranks >= GPUs per node fail.",
    ),
    (
        "RM545",
        "per_process_visible_devices",
        "each process sees only its own GPU(s)",
        "Slurm --gpus-per-task, Ray, dask-cuda or MPI bindings give every process its own "
        "CUDA_VISIBLE_DEVICES, but the code indexes devices as if it saw the whole node.",
    ),
    (
        "RM645",
        "mig",
        "MIG instances are involved",
        "MIG instances are used by several ranks, or several expected in one process.",
    ),
    (
        "RM745",
        "container_mapping",
        "container / Kubernetes GPU passthrough",
        "The container or pod got the wrong, the same or no GPU.",
    ),
    (
        "RM845",
        "host_identity",
        "machines or containers share one host identity",
        "NCCL takes ranks with one hostname/boot_id for one host (P2P/IPC across machines).",
    ),
    (
        "RM945",
        "launcher_config",
        "launcher or framework configuration",
        "Launcher options, --local-rank handling or a framework setting contradict the job.",
    ),
)
for _code, _cat, _summary, _cause in _BEST_GUESS:
    define(
        _code,
        _cat,
        "warning",
        f"Best-supported cause: {_summary}",
        cause=f"{_cause} Scored over all the evidence of the input; no specific rule decided. "
        "Severity follows the evidence: warning when the input shows a failure that points at "
        "the mapping (error when the cause is also decided); info - a possible cause, not an "
        "alarm - when the input reports no failure, or only context (a docker run, a Slurm "
        "binding, a launcher) names the category next to a failure that points elsewhere.",
        fix=_DECIDE,
        example="`Best-supported cause: ... (score 7 vs 3)` with the quoted lines behind it.",
    )
