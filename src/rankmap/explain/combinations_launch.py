"""Combinations about the launch (:mod:`rankmap.explain.combinations`): a launch that cannot fit
the GPUs or leaves some idle, launchers nested in launchers, --standalone over several nodes,
mp.spawn under a launcher, separate worlds, Lightning's tasks under Slurm.
"""

from __future__ import annotations

from rankmap.codes import lookup
from rankmap.explain.context import Context
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.score_model import Scores

# Launchers that start one process per GPU (reference/launchers.md §1): fewer processes than GPUs
# leaves GPUs idle under them; mpirun / srun programs may drive several GPUs each.
_PER_GPU_LAUNCHERS = frozenset({"torchrun", "torch.distributed.launch", "accelerate", "deepspeed"})


def standalone_on_several_nodes(ctx: Context, s: Scores) -> None:
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


def nested_launchers(ctx: Context, s: Scores) -> None:
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


def spawn_under_a_launcher(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
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


def one_gpu_symptom(doc: DocFacts) -> bool:
    """The job ran out of memory, or the reporter says one GPU is used: what GPUs left idle by
    a launch (or an engine) that asks for fewer than it may use show."""
    return bool({"outside-oom", "one-gpu-used"} & set(doc.hits))


def launch_below_gpus(ctx: Context, doc: DocFacts | None, s: Scores, nproc: int | None) -> None:
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
    one_gpu = "one-gpu-used" in doc.hits if own_tasks else one_gpu_symptom(doc)
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


def world_of_one(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
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


def launch_cannot_fit(ctx: Context, s: Scores, gpus: int | None) -> None:
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
    if launch.launcher == "deepspeed" and ds_selects(ctx):
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


def lightning_tasks(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
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


_DS_SELECT = ("--num_gpus", "--num_accelerators", "--num_nodes", "--include", "--exclude", "-i ",
              "-e ", "--hostfile", "-H ")  # fmt: skip


def ds_selects(ctx: Context) -> bool:
    """The DeepSpeed launch passes one of the options that make it ignore CVD."""
    cmd = f" {ctx.launch.command} " if ctx.launch else ""
    return any(f" {opt}" in cmd or f" {opt.strip()}=" in cmd for opt in _DS_SELECT)
