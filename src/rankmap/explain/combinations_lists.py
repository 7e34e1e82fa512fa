"""Combinations about visible-devices lists and ordinals (:mod:`rankmap.explain.combinations`):
a list against the symptom (an invalid ordinal, ranks on one GPU), lists that launchers,
schedulers or frameworks set, a GPU list indexed by a rank, a list below the parallel sizes.
"""

from __future__ import annotations

import re

from rankmap.explain.catalogue_stack import DEVICE_LIST_INDEX
from rankmap.explain.combinations_launch import ds_selects, one_gpu_symptom, one_machine_told
from rankmap.explain.context import Context
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.score_model import PT_SECTION, Scores
from rankmap.explain.visible_lists import list_agent, writers_list
from rankmap.findings import Finding

_GLOBAL_INDEX = re.compile(
    r"task_index|task_id|process_id|process_index|global_rank|hvd\.rank\(\)|\brank\b|\bRANK\b|"
    r"get_rank\(\)|PROCID|COMM_WORLD_RANK"
)


_LOCAL_INDEX = re.compile(r"local|LOCAL|LOCALID")


def device_list_index(doc: DocFacts | None, s: Scores) -> None:
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


def visible_below_parallelism(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
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
    if idle is not None and one_gpu_symptom(doc):
        s.failure = s.mapping_failure = True  # the OOM of one GPU is the mapping's symptom
        s.add(
            "launcher_config",
            3.0,
            f"the command makes {idle[1]} GPUs visible and its engine uses {idle[0]} (its "
            "parallel sizes, or the engine's default of 1 where it names none): the model is "
            f"sharded over {idle[0]} GPU(s) only, the others stay idle",
        )


def list_starts_no_processes(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """A visible-devices list of several GPUs, one GPU used, and no launcher of several
    processes in the input (the program started as one `python train.py`): the list makes GPUs
    visible, it starts no process on them — one process trains on one GPU unless a launcher
    starts one per GPU (reference/launchers.md §1; cuda_devices.md §1). The list is not wrong."""
    # (a launch given with --launch is part of the text: its launcher is a job word)
    if doc is None or "one-gpu-used" not in doc.hits or doc.tells_several_processes():
        return
    # the last list the text sets (a run the writer tried before is history; code that sets it
    # after an export is what the process sees), else the one given with --env
    told = doc.visible_lists[-1].split(",") if doc.visible_lists else []
    entries = [e for e in (told or ctx.cvd_entries() or []) if e.strip()]
    if len(entries) < 2 or "single-process-multi-gpu" in doc.hits:
        return
    s.failure = True
    s.add(
        "launcher_config",
        4.0,
        f"CUDA_VISIBLE_DEVICES lists {len(entries)} GPUs and one is used, with no launcher of "
        "several processes: a list makes GPUs visible, it starts no process on them "
        "(reference/launchers.md §1)",
        doc.quoted("one-gpu-used"),
    )
    s.add("visible_devices_mismatch", -1.0, "the list itself holds the GPUs meant")
    s.name_fix(
        "launcher_config",
        4.0,
        "Start one process per GPU with the framework's launcher (`torchrun --nproc_per_node "
        f"{len(entries)} train.py`, `python -m paddle.distributed.launch --gpus "
        f"{','.join(entries)} train.py`), or make the script drive the GPUs itself",
    )


def no_gpu_modulo(doc: DocFacts | None, s: Scores) -> None:
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


def lists_and_ordinals(ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]) -> None:
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


def launcher_and_binding(
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
    if deepspeed and ctx.user_cvd() and ds_selects(ctx):
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
