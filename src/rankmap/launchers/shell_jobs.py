"""The launch lines of one shell script read together: lines that run one after another are
separate jobs (the largest is checked); lines that run at once (``&``) are simulated together —
as independent worlds (RM902 when each is a process-group launcher with no rank of its own), or as
one world started by hand (a rank or node rank per line), with the master ports they bind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from rankmap.launchers import LaunchContext, LaunchIssue, LaunchPlan, Proc, identify
from rankmap.launchers.options import option_value

EADDRINUSE = (
    "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
    "network address. port: {port}, useIpv6: false, code: -98, name: EADDRINUSE, message: "
    "address already in use"
)


@dataclass(frozen=True)
class ShellLaunch:
    """One launch line (after loop expansion): env prefix + exports, argv, source line."""

    env: Mapping[str, str]
    argv: tuple[str, ...]
    line: int
    unset: frozenset[str] = frozenset()  # env -u NAME on the launch line
    background: bool = False  # followed by a single `&`: it runs while the next lines start
    job: int = 0  # lines of one job may run at once; a `wait` or another if-branch starts a new one

    @property
    def command(self) -> list[str]:
        """The line as one command for the dispatcher (``env -u X A=1 torchrun ...``)."""
        words = [f"-u{n}" for n in sorted(self.unset)] + [f"{k}={v}" for k, v in self.env.items()]
        return (["env", *words] if words else []) + list(self.argv)


# Launchers whose every process joins a process group (a plain `python x.py` may not)
_GROUP_LAUNCHERS = ("torchrun", "torch.distributed.launch", "accelerate", "deepspeed")
# What numbers the lines of one world started by hand: a rank or a node rank per line
_WORLD_VARS = ("RANK", "NODE_RANK", "GROUP_RANK")
_WORLD_OPTS = ("--node_rank", "--node-rank", "--machine_rank", "--machine-rank")
# a script's own option for its rank in the world (``python train.py --rank $i --world_size 8``)
_RANK_OPTS = ("--rank", "--global_rank", "--global-rank", "--process_id", "--process-id")
_WORLD_SIZE_OPTS = ("--world_size", "--world-size", "--num_processes", "--num-processes",
                    "--nprocs", "--world")  # fmt: skip


def _largest(launches: Sequence[ShellLaunch], ctx: LaunchContext, path: Path) -> LaunchPlan:
    """Lines that run one after another (no ``&``: a preprocessing step, a training run, an
    evaluation) are separate jobs that never share a GPU at the same time: the largest one is
    checked, with its own script; the others are named in a note."""
    plans = [ctx.launch(sl.command, ctx) for sl in launches]
    best = max(range(len(plans)), key=lambda i: (plans[i].world_size, -i))
    others = ", ".join(str(sl.line) for i, sl in enumerate(launches) if i != best)
    note = (
        f"{path}: {len(launches)} launch lines that do not run at once (one after another, or "
        f"alternative branches of an if/case); line {launches[best].line} (the largest job) is "
        f"checked, line(s) {others} run alone."
    )
    return replace(plans[best], notes=(*plans[best].notes, note))


def _one_world_by_hand(launches: Sequence[ShellLaunch]) -> bool:
    """Whether the lines carry their own rank or node rank: one world started line by line."""
    ranks = [_line_rank(sl) for sl in launches]
    return len({r for r in ranks if r is not None}) >= 2


def _line_rank(sl: ShellLaunch) -> str | None:
    """The rank or node rank a launch line gives itself (``RANK=``, ``--node_rank``), if any."""
    return (
        next((sl.env[v] for v in _WORLD_VARS if v in sl.env), None)
        or option_value(sl.argv, _WORLD_OPTS)
        or _script_rank(sl)
    )


def _script_rank(sl: ShellLaunch) -> str | None:
    """The rank a single-process line passes its script with the world's size beside it
    (``python train.py --rank 3 --world_size 8``); a ``--rank`` alone may be anything (a LoRA
    rank of a hyper-parameter sweep, review 57)."""
    if identify(sl.argv) != "python" or option_value(sl.argv, _WORLD_SIZE_OPTS) is None:
        return None
    value = option_value(sl.argv, _RANK_OPTS)
    return value if value is not None and value.strip().isdecimal() else None


def _own_node(sl: ShellLaunch, plan: LaunchPlan) -> tuple[Proc, ...]:
    """The processes a line of a world started by hand starts itself: those of its own node
    rank (``--nnodes 2 --node_rank 1`` starts node 1's processes, not the whole world's). A line
    that gives no node rank starts node 0's, which is what torchrun's default node rank does."""
    rank = _line_rank(sl)
    own = tuple(p for p in plan.procs if rank is not None and str(p.node_rank) == rank.strip())
    return own or tuple(p for p in plan.procs if p.node == 0)


def _combine(launches: Sequence[ShellLaunch], ctx: LaunchContext, path: Path) -> LaunchPlan:
    plans = [ctx.launch(sl.command, ctx) for sl in launches]
    by_hand = _one_world_by_hand(launches)
    shifts = _step_shifts(launches, plans)
    procs: list[Proc] = []
    for w, (sl, plan) in enumerate(zip(launches, plans, strict=False)):
        for pr in _own_node(sl, plan) if by_hand else plan.procs:
            env = {**sl.env, **plan.node_env.get(pr.node, {}), **pr.env}
            env = _shifted(env, shifts[w].get(pr.node, 0))
            # the lines of one script run on the machine that runs the script, and a line that
            # starts one process with RANK=k is rank k of the world (not its own rank 0)
            own = sl.env.get("RANK", "") or _script_rank(sl) or ""
            rank = int(own) if by_hand and len(plan.procs) == 1 and own.isdecimal() else pr.rank
            procs.append(replace(pr, world=w, env=env, node=0 if by_hand else pr.node, rank=rank))
    first = max(plans, key=lambda p: p.world_size)  # the summary shows the largest world
    issues = _independent_worlds(launches, plans, path)
    issues += _port_clash(launches, plans)
    for plan in plans:
        # a fixed --node_rank per line is how a world is started by hand (RM804 is for one
        # command meant for every node)
        issues += [
            i for i in plan.issues if i not in issues and not (by_hand and i.code == "RM804")
        ]
    return LaunchPlan(
        launcher="shell",
        nnodes=1 if by_hand else first.nnodes,
        nproc_per_node=len(procs) if by_hand else first.nproc_per_node,
        procs=tuple(procs),
        script=first.script,
        issues=tuple(issues),
        notes=(f"{path}: {len(plans)} launches of {first.launcher}.",),
        worlds=len(plans),
        joined=by_hand,
        per_process_cvd=True,
        sets_local_rank=first.sets_local_rank,
        argv=first.argv,
        hosts=first.hosts,
        env=ctx.env,
    )


def _step_shifts(
    launches: Sequence[ShellLaunch], plans: Sequence[LaunchPlan]
) -> list[dict[int, int]]:
    """How far each srun step's GPUs lie past those of the steps started before it, per node.
    Slurm does not let steps that run at once share GPUs unless they ask to (srun man page,
    --overlap: "By default steps do not share resources with other parallel steps"), so a
    second `srun --gpus=4 ... &` gets the allocation's next four GPUs; a step that no longer
    fits waits for the first to end, and is left on the first GPUs here."""
    taken: dict[int, int] = {}
    shifts: list[dict[int, int]] = []
    for sl, plan in zip(launches, plans, strict=False):
        gpn = plan.gpus_per_node
        if identify(list(sl.argv)) != "srun" or "--overlap" in sl.argv or not gpn:
            shifts.append({})
            continue
        mine: dict[int, int] = {}
        for node, host in enumerate(plan.hosts):
            start = taken.get(node, 0)
            if start + gpn <= len(host.gpus):
                mine[node] = start
                taken[node] = start + gpn
        shifts.append(mine)
    return shifts


def _shifted(env: Mapping[str, str], shift: int) -> dict[str, str]:
    """``env`` with the GPU ids Slurm set (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS) moved up by
    ``shift``: the step's own GPUs of the allocation."""
    out = dict(env)
    if shift:
        for name in ("CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS"):
            ids = out.get(name, "").split(",")
            if ids and all(i.isdecimal() for i in ids):
                out[name] = ",".join(str(int(i) + shift) for i in ids)
    return out


def _independent_worlds(
    launches: Sequence[ShellLaunch], plans: Sequence[LaunchPlan], path: Path
) -> list[LaunchIssue]:
    """RM902 for launches that run at once, each a launcher whose processes form a process
    group, and that carry no rank of one world: a sweep of plain `python` runs, or a world
    started line by line (RANK / --node_rank per line), is no such mistake."""
    if _one_world_by_hand(launches) or any(
        identify(list(sl.argv)) not in _GROUP_LAUNCHERS for sl in launches
    ):
        return []
    sizes = [p.world_size for p in plans]
    # each line a whole multi-process job (two 4-GPU runs on an 8-GPU machine), or lines that
    # run different experiments (--fold $i, another config): separate jobs, not one split
    # (review 17)
    if all(size > 1 for size in sizes) or len({_experiment(sl) for sl in launches}) > 1:
        return []
    first = plans[0]
    total = sum(sizes)
    return [
        LaunchIssue(
            "RM902",
            f"{len(plans)} independent launches (worlds of size {', '.join(map(str, sorted(set(sizes))))}) "
            f"instead of one job of {total} ranks",
            detail=f"{path}: line(s) {', '.join(sorted({str(sl.line) for sl in launches}))} start their "
            "own launcher; every world has its own rank 0 and no rank talks to another world.",
            fix=f"torchrun --nproc-per-node {total} {first.script or 'train.py'}  (one launch; each rank "
            "selects cuda:LOCAL_RANK)",
            ranks=tuple(range(total)),
        )
    ]


# Options that differ between the lines of one job split by hand (its rendezvous), not between
# experiments
_RENDEZVOUS_OPTS = (
    "--master_port", "--master-port", "--main_process_port", "--main-process-port",
    "--rdzv_endpoint", "--rdzv-endpoint", "--rdzv_id", "--rdzv-id",
)  # fmt: skip


def _experiment(sl: ShellLaunch) -> tuple[str, ...]:
    """A launch line without its rendezvous options: what the line runs."""
    words: list[str] = []
    skip = False
    for word in sl.argv:
        if skip:
            skip = False
            continue
        name = word.split("=", 1)[0]
        if name in _RENDEZVOUS_OPTS:
            skip = "=" not in word
            continue
        words.append(word)
    return tuple(words)


def _port_clash(launches: Sequence[ShellLaunch], plans: Sequence[LaunchPlan]) -> list[LaunchIssue]:
    ports: dict[str, list[int]] = {}
    for w, (sl, plan) in enumerate(zip(launches, plans, strict=False)):
        if plan.launcher not in ("torchrun", "torch.distributed.launch", "accelerate"):
            continue
        port = option_value(
            sl.argv, ("--master_port", "--master-port", "--main_process_port")
        ) or sl.env.get("MASTER_PORT", "29500")
        if "--standalone" in sl.argv or not _hosts_the_store(sl) or "$" in port:
            continue  # (a port the script computes where rankmap cannot: not compared)
        ports.setdefault(port, []).append(w)
    out = []
    for port, worlds in ports.items():
        if len(worlds) > 1:
            line = EADDRINUSE.format(port=port)
            out.append(
                LaunchIssue(
                    "RM906",
                    f"{len(worlds)} launches bind the same master port {port}",
                    detail="Only the first can host the store; the others fail to start.",
                    fix="one launch for the whole job, or a different --master-port per launch",
                    predicted=(line,),
                )
            )
    return out


def _hosts_the_store(sl: ShellLaunch) -> bool:
    """Whether the line's launcher binds the master port: node rank (or rank) 0, or not given;
    the other nodes of a world connect to it as clients."""
    rank = _line_rank(sl)
    return rank is None or rank.strip() in ("0", "")


def several_launches(launches: Sequence[ShellLaunch], ctx: LaunchContext, path: Path) -> LaunchPlan:
    """The plan of two or more launch lines of ``path``: lines of one job that run at once are
    combined; jobs one after another (a `wait`, lines without `&`, other branches of an if) are
    separate, and the largest is checked."""
    jobs: dict[int, list[ShellLaunch]] = {}
    for sl in launches:
        jobs.setdefault(sl.job, []).append(sl)
    together = [j for j in jobs.values() if len(j) > 1 and all(sl.background for sl in j[:-1])]
    if len(jobs) == 1 and together:
        return _combine(launches, ctx, path)
    if together:  # one job of several lines at once, others alone: the largest of them all
        plans = [_combine(j, ctx, path) for j in together]
        alone = [sl for j in jobs.values() if j not in together for sl in j]
        plans += [ctx.launch(sl.command, ctx) for sl in alone]
        best = max(plans, key=lambda p: len(p.procs))
        # what the other jobs get wrong is still said (review 38: a port clash of an evaluation
        # job vanished behind the larger training job after it)
        others = [i for p in plans if p is not best for i in p.issues if i.severity != "info"]
        note = f"{path}: {len(plans)} jobs run one after another; the largest is mapped."
        return replace(
            best,
            issues=(*best.issues, *(i for i in others if i not in best.issues)),
            notes=(*best.notes, note),
        )
    return _largest(launches, ctx, path)
