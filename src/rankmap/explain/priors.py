"""Priors of the failure classes: what a failure of one class makes likely, before any context.

A *failure class* (:mod:`rankmap.explain.catalogue_family`: an invalid device in any stack's
wording, a device-count message, a generic CUDA/communicator error, a hang at the first
collective, a traceback through device/communicator set-up, ...) marks a failure of this family
but names no cause. Its weights are a prior ``P(category | class)``, scaled to the class's *mass*
(how many points the class may hand out at most), so that any specific signal or the context
(launch, code, env, machine) decides.

The distribution is estimated from the **development part** of the public-thread corpus only
(``benchmarks/explain_priors.py --write``: counts of each thread's confirmed categories among
the dev threads whose paste or log shows the class; a thread with two categories counts half to
each; a *negative* thread — a failure outside the family — counts to ``other``, which is what
keeps a generic message from being a mapping alarm on its own). The counts are smoothed towards
a hand prior (:data:`HAND`, the reading of ``shared/reference/`` before any data) with the weight
of :data:`SMOOTHING` threads, so a class seen in two threads keeps most of its hand prior and one
seen in twenty follows the data.
"""

from __future__ import annotations

SMOOTHING = 4.0  # the hand prior weighs as much as this many threads
MIN_WEIGHT = 0.1  # smaller shares are dropped

# Points a class hands out at most (its weights sum to this).
MASS: dict[str, float] = {
    "invalid-device-any": 4.5,
    "device-count-message": 3.5,
    "device-error-any": 1.5,
    "comm-error-any": 1.5,
    "nccl-cuda-call-failed": 2.0,
    "hang-at-collective": 3.0,
    "gpu-held-by-another": 4.0,
    "init-traceback": 2.0,
    "collective-timeout": 2.0,
    "negative-device-index": 2.5,
    "exception-any": 0.5,
    "device-placement": 3.0,
    "device-selection-problem": 2.0,
}

# The prior before data: what reference/*.md makes likely for each class (relative weights).
HAND: dict[str, dict[str, float]] = {
    # cuda_devices.md §1, launchers.md §1 "typical torchrun misconfigurations"
    "invalid-device-any": {
        "visible_devices_mismatch": 1.5,
        "oversubscribed": 1,
        "global_rank_as_device": 1,
        "per_process_visible_devices": 1,
    },
    # cuda_devices.md §1, §3
    "device-count-message": {
        "visible_devices_mismatch": 1.5,
        "oversubscribed": 1,
        "container_mapping": 0.5,
        "mig": 0.5,
    },
    # CUDA runtime error codes: a device error alone says little about the mapping
    "device-error-any": {"other": 1, "version_mismatch": 0.5},
    # nccl.md (e)
    "comm-error-any": {"other": 1, "host_identity": 0.5},
    # nccl.md (e): ncclUnhandledCudaError is a failed CUDA call: a driver/runtime/build that
    # does not fit (cuda_devices.md), or a peer GPU out of reach (per-process visibility, P2P)
    "nccl-cuda-call-failed": {
        "version_mismatch": 1,
        "other": 1,
        "per_process_visible_devices": 0.5,
    },
    # nccl.md (b), (d); pytorch_nccl.md §2; a rendezvous that waits for processes the launch
    # never starts or starts as another job's (launchers.md §3: machine_rank copied between
    # hosts hangs the rendezvous; init_process_group waits for all world_size ranks)
    "hang-at-collective": {
        "other": 1.5,
        "host_identity": 1,
        "launcher_config": 1,
        "no_set_device": 0.5,
    },
    # pytorch_nccl.md §1: two processes on one device
    "gpu-held-by-another": {"oversubscribed": 2, "no_set_device": 1.5, "container_mapping": 0.5},
    # a traceback through set_device / init_process_group / DDP's first broadcast
    # (pytorch_nccl.md §1, §7.1): the device or the communicator could not be set up
    "init-traceback": {
        "no_set_device": 1,
        "visible_devices_mismatch": 1,
        "launcher_config": 1,
        "other": 1,
    },
    # pytorch_nccl.md §3: the watchdog's timeout of an early collective (SeqNum 0-2)
    "collective-timeout": {"other": 1.5, "host_identity": 1, "no_set_device": 1},
    # launchers.md §2: --local_rank (default -1) is not passed by torchrun
    "negative-device-index": {"launcher_config": 1.5, "other": 1},
    # pytorch_nccl.md §1: 'cuda' without an index is the current device (cuda:0 without
    # set_device); a visible-devices list renumbers (cuda_devices.md §1)
    "device-placement": {"no_set_device": 1.5, "visible_devices_mismatch": 1, "other": 1},
    # a prose report that the GPU a process uses is wrong (cuda_devices.md §1-2: the visible list
    # and CUDA's order; pytorch_nccl.md §1: the device the code selects; launchers.md §5: a
    # scheduler that narrows each task's GPUs)
    "device-selection-problem": {
        "visible_devices_mismatch": 1.5,
        "no_set_device": 1,
        "per_process_visible_devices": 1,
        "oversubscribed": 0.5,
        "other": 0.5,
    },
    # an exception without a message of this family: something failed, nothing says what
    "exception-any": {"other": 1},
}

# Most specific first: a failure's prior is that of the most specific class it shows (an
# "invalid device ordinal" inside a "CUDA error" line is an invalid device, not a device error).
ORDER: tuple[str, ...] = (
    "negative-device-index",
    "invalid-device-any",
    "device-count-message",
    "gpu-held-by-another",
    "device-placement",
    "collective-timeout",
    "hang-at-collective",
    "nccl-cuda-call-failed",
    "comm-error-any",
    "device-error-any",
    "device-selection-problem",  # prose: the choice of GPU went wrong, nothing says why
    "init-traceback",  # where it failed, not what: only when no message class matched
    "exception-any",  # an exception and nothing else: the weakest mark of a failure
)


def leading_class(matched: set[str] | frozenset[str]) -> str | None:
    """The most specific failure class among ``matched`` (signal ids), if any."""
    return next((c for c in ORDER if c in matched), None)


# BEGIN GENERATED by benchmarks/explain_priors.py --write (dev part only; do not edit by hand)
DEV_THREADS = 581  # batch all
BATCHES = "all"  # the dev batches counted
COUNTS: dict[str, dict[str, float]] = {
    "collective-timeout": {"no_set_device": 0.5},
    "comm-error-any": {
        "global_rank_as_device": 0.75,
        "no_set_device": 0.75,
        "other": 10.5,
        "per_process_visible_devices": 0.5,
        "version_mismatch": 2.5,
        "visible_devices_mismatch": 0.5,
    },
    "device-count-message": {"per_process_visible_devices": 1.0},
    "device-error-any": {"other": 2.5, "version_mismatch": 2.0},
    "device-placement": {"launcher_config": 1.0, "no_set_device": 1.0},
    "device-selection-problem": {
        "container_mapping": 0.5,
        "global_rank_as_device": 1.0,
        "host_identity": 0.5,
        "launcher_config": 1.75,
        "no_set_device": 2.5,
        "other": 2.75,
        "per_process_visible_devices": 1.5,
        "visible_devices_mismatch": 2.5,
    },
    "exception-any": {
        "global_rank_as_device": 0.5,
        "host_identity": 0.5,
        "launcher_config": 6.0,
        "mig": 0.5,
        "no_set_device": 0.5,
        "other": 26.0,
        "oversubscribed": 0.5,
        "per_process_visible_devices": 0.75,
        "version_mismatch": 1.5,
        "visible_devices_mismatch": 1.75,
    },
    "gpu-held-by-another": {
        "container_mapping": 0.25,
        "no_set_device": 1.0,
        "oversubscribed": 0.25,
    },
    "hang-at-collective": {"launcher_config": 0.5, "other": 1.0},
    "init-traceback": {"visible_devices_mismatch": 1.0},
    "invalid-device-any": {
        "container_mapping": 1.0,
        "global_rank_as_device": 1.5,
        "launcher_config": 0.25,
        "mig": 0.5,
        "other": 0.5,
        "oversubscribed": 8.75,
        "per_process_visible_devices": 0.5,
        "visible_devices_mismatch": 3.0,
    },
    "nccl-cuda-call-failed": {"host_identity": 0.5, "other": 1.0, "version_mismatch": 4.0},
}
# measured precision of noisy context supports (signal -> category -> precision)
NOISY: dict[str, dict[str, float]] = {
    "all-on-gpu0": {"other": 0.04},
    "cuda-ipc": {"container_mapping": 0.0, "host_identity": 0.0, "other": 0.25},
    "cuda-versions": {"version_mismatch": 0.21},
    "cupy": {"version_mismatch": 0.12},
    "cvd-ignored": {"launcher_config": 0.21, "per_process_visible_devices": 0.11},
    "gfx-arch": {"version_mismatch": 0.2},
    "hang-first-collective": {"host_identity": 0.07},
    "horovod": {"launcher_config": 0.09},
    "inside-container": {"host_identity": 0.03},
    "master-addr": {"launcher_config": 0.13},
    "mpi-local": {"launcher_config": 0.22, "per_process_visible_devices": 0.11},
    "multi-node": {"host_identity": 0.12},
    "no-cuda-device": {"container_mapping": 0.0, "per_process_visible_devices": 0.0},
    "one-gpu-used": {"no_set_device": 0.1, "per_process_visible_devices": 0.2},
    "same-gpu": {"no_set_device": 0.0, "visible_devices_mismatch": 0.1},
    "uuid-as-int": {"visible_devices_mismatch": 0.25},
}
# END GENERATED


NOISY_WEIGHT = 0.5  # the most a noisy context support weighs (see NOISY)


def capped(sid: str, supports: tuple[tuple[str, float], ...]) -> tuple[tuple[str, float], ...]:
    """A signal's supports with its noisy ones (:data:`NOISY`: matched in >= 4 dev threads, of
    which at most a quarter confirm the category) cut to :data:`NOISY_WEIGHT`: context that
    appears in threads of every cause (a CUDA_VISIBLE_DEVICES line, a MASTER_ADDR, "multi-node")
    must not outvote the evidence that names one."""
    noisy = NOISY.get(sid)
    if not noisy:
        return supports
    return tuple((c, min(w, NOISY_WEIGHT) if c in noisy else w) for c, w in supports)


def prior(cls: str) -> dict[str, float]:
    """``{category: points}`` of a failure class: its mass times the smoothed distribution."""
    hand = HAND[cls]
    total = sum(hand.values())
    seen = COUNTS.get(cls, {})
    n = sum(seen.values())
    cats = sorted(set(hand) | set(seen))
    share = {
        c: (seen.get(c, 0.0) + SMOOTHING * hand.get(c, 0.0) / total) / (n + SMOOTHING) for c in cats
    }
    out = {c: round(MASS[cls] * p, 2) for c, p in share.items()}
    return {c: w for c, w in sorted(out.items(), key=lambda cw: -cw[1]) if w >= MIN_WEIGHT}
