"""The program each task of ``srun`` / ``mpirun`` runs when that program is a shell:
``srun bash -c 'LOCAL_RANK=$SLURM_LOCALID python train.py'``, or a wrapper script that exports
variables and ``exec``s python.

The shell starts once per task, after the launcher has set that task's variables, so a reference
to one of them (``$SLURM_LOCALID``, ``$OMPI_COMM_WORLD_LOCAL_RANK``) takes each task's own value
(POSIX: parameter expansion happens when the command runs, in the environment it runs in). A
reference rankmap cannot resolve is left out, with a note (open world); a shell that runs several
programs, or none that rankmap knows, is left as it was.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from rankmap.errors import RankMapError
from rankmap.launchers import LaunchContext, Proc, identify
from rankmap.launchers.command import SHELL_VALUE_OPTS, SHELLS, expand_word, shell_body_index
from rankmap.launchers.shell import expand_arithmetic, parse_shell
from rankmap.launchers.shell_lex import TASK_HOST


@dataclass(frozen=True)
class TaskProgram:
    """What one task's shell ends up running, and the variables it sets for it."""

    argv: tuple[str, ...]  # the program (python train.py ... or a launcher)
    env: Mapping[str, str]  # assignments with a literal value: the same in every task
    per_task: Mapping[str, str]  # assignments that name a variable: expanded task by task
    where: str  # "bash -c" or the wrapper script's path
    # the rendezvous address is this task's own host (``--master_addr=$(hostname)``): every
    # node's shell expands it to itself, so on several nodes each one waits for its own world
    own_host_master: str | None = None

    @property
    def args_per_task(self) -> bool:
        """The program's own words name a variable (``--local_rank $SLURM_LOCALID``)."""
        return any("$" in word for word in self.argv[1:])


def task_program(
    inner: Sequence[str], ctx: LaunchContext, task_vars: Iterable[str]
) -> TaskProgram | None:
    """The program behind ``bash -c '...'`` / ``sh wrapper.sh`` / ``./wrapper.sh``, or None.
    ``task_vars``: the variables the launcher sets in each task (they stay references here, so
    that ``${SLURM_LOCALID:-0}`` is not read as its default)."""
    found = _shell_text(inner, ctx)
    if found is None:
        return None
    text, where, positional = found
    known = {name: f"${{{name}}}" for name in task_vars}
    try:
        script = parse_shell(text, where, {**known, **_positional(positional)})
    except RankMapError:
        return None
    if len(script.launches) != 1:
        return None
    launch = script.launches[0]
    env = {k: v for k, v in launch.env.items() if k not in launch.unset}
    own = _OWN_HOST_MASTER.search(text)
    return TaskProgram(
        own_host_master=own.group(0).replace(TASK_HOST, "$(hostname)") if own else None,
        argv=tuple(launch.argv),
        env={k: v for k, v in env.items() if "$" not in v},
        per_task={k: v for k, v in env.items() if "$" in v},
        where=where,
    )


# a rendezvous address the task's own shell computes as its own host
_OWN_HOST_MASTER = re.compile(
    r"(?:--master[_-]addr|--rdzv[_-]endpoint|--main[_-]process[_-]ip|MASTER_ADDR)[= ]"
    r"['\"]?" + re.escape(TASK_HOST)
)


def _positional(args: Sequence[str]) -> dict[str, str]:
    """The shell's positional parameters: ``$@`` / ``$*`` (quoted back into words), ``$1`` …,
    ``$#``: a wrapper that ends in ``exec "$@"`` runs the words after it on the task's line."""
    import shlex

    joined = shlex.join(args)
    return {"@": joined, "*": joined, "#": str(len(args))} | {
        str(i): arg for i, arg in enumerate(args, start=1)
    }


def _shell_text(inner: Sequence[str], ctx: LaunchContext) -> tuple[str, str, list[str]] | None:
    """The shell text a task runs, where it comes from, and its positional arguments."""
    if not inner:
        return None
    prog = os.path.basename(inner[0])
    path: str | None = inner[0] if prog.endswith(".sh") else None
    args = list(inner[1:])
    if prog in SHELLS:
        body = shell_body_index(inner)
        if body is not None:  # bash -c 'BODY' NAME ARGS...: NAME is $0
            return inner[body], f"{prog} -c", list(inner[body + 2 :])
        words = list(inner[1:])
        while words and words[0].startswith(("-", "+")) and words[0] != "-":
            option = words.pop(0)
            if option in SHELL_VALUE_OPTS and words:
                words.pop(0)
        path = words[0] if words else None
        args = words[1:]
    if path is None:
        return None
    try:
        return ctx.read(path, "task script"), path, args
    except RankMapError:
        return None


def with_task_env(
    procs: Sequence[Proc], node_env: Mapping[int, Mapping[str, str]], program: TaskProgram
) -> tuple[list[Proc], list[str]]:
    """Each task with the variables its shell sets from the task's own ones, and the names that
    could not be resolved (left unset)."""
    out: list[Proc] = []
    unresolved: set[str] = set()
    for proc in procs:
        scope = {**node_env.get(proc.node, {}), **proc.env}
        env = dict(proc.env)
        for name, value in program.per_task.items():
            expanded = expand_word(expand_arithmetic(value, scope), scope)
            if "$" in expanded:
                unresolved.add(name)
                continue
            env[name] = expanded
            scope[name] = expanded
        args = proc.args
        if program.args_per_task:
            args = args + tuple(expand_word(word, scope) for word in program.argv[1:])
        out.append(replace(proc, env=env, args=args))
    return out, sorted(unresolved)


def task_note(program: TaskProgram, unresolved: Sequence[str]) -> str:
    """What the report says of the per-task shell."""
    parts = []
    if program.per_task:
        parts.append(f"sets {', '.join(sorted(program.per_task))} from the task's own variables")
    if program.args_per_task:
        parts.append("passes arguments built from the task's own variables")
    note = f"each task runs {program.where}, then {' '.join(program.argv[:2])}"
    if parts:
        note += ": it " + " and ".join(parts)
    if unresolved:
        note += f"; {', '.join(unresolved)} could not be resolved (left unset)"
    return note


# The options that give a launcher its node rank: taken from a per-node variable
# (``--node_rank $SLURM_NODEID``), each node gets its own, as the nested simulation assumes
_NODE_RANK_OPTS = ("--node_rank", "--node-rank", "--machine_rank", "--machine-rank")


def launcher_argv(
    program: TaskProgram, procs: Sequence[Proc], node_env: Mapping[int, Mapping[str, str]]
) -> list[str]:
    """A launcher run by every task's shell (``srun bash -c 'torchrun --nnodes $SLURM_NNODES
    --node_rank $SLURM_NODEID ...'``), as node 0's first task runs it; a node rank read from a
    variable is dropped (every node has its own: what the nested launcher's plan assumes)."""
    scope = {**node_env.get(0, {}), **(procs[0].env if procs else {})}
    words: list[str] = []
    argv = list(program.argv)
    skip = False
    for i, word in enumerate(argv):
        if skip:
            skip = False
            continue
        name, eq, value = word.partition("=")
        if name in _NODE_RANK_OPTS:
            raw = value if eq else (argv[i + 1] if i + 1 < len(argv) else "")
            if "$" in raw and name.startswith("--machine"):
                # accelerate: kept as a reference, so that it overrides the config file's
                # machine_rank (the option wins over the file) as each node's own value
                words += [name, raw]
                skip = not eq
                continue
            if "$" in raw:
                skip = not eq
                continue
        words.append(expand_word(word, scope))
    return words


# the marker a process's CUDA_VISIBLE_DEVICES gets when a wrapper rankmap could not read runs
# before python: a shell parameter, so check reads the list as computed (not simulated, RM030)
def unread_wrapper_env(inner: Sequence[str], program: TaskProgram | None) -> dict[str, str]:
    """``{"CUDA_VISIBLE_DEVICES": "$(WRAPPER: not read)"}`` when each task runs a wrapper
    (``./bind_gpu.sh python train.py``, ``/opt/bin/wrap python train.py``) that was not read and
    that goes on to run python: such wrappers commonly set the task's GPU list (open world: what
    it sets is unknown, never assumed unset); ``{}`` otherwise."""
    if program is not None or not inner or identify(inner) not in ("shell", None):
        return {}
    if "/" not in inner[0] and not inner[0].endswith(".sh"):
        return {}  # a command from PATH (timeout, ncu, strace): a tool, not a binding wrapper
    runs_python = any(
        os.path.basename(word).startswith("python") or word.endswith(".py") for word in inner[1:]
    )
    if not runs_python:
        return {}
    return {"CUDA_VISIBLE_DEVICES": f"$({os.path.basename(inner[0])}{_NOT_READ})"}


_NOT_READ = ": not read"


def unread_wrapper(value: str) -> str | None:
    """The wrapper named by :func:`unread_wrapper_env`'s marker in ``value``, or None."""
    m = re.search(rf"\$\((.+){re.escape(_NOT_READ)}\)", value)
    return m.group(1) if m else None


def task_procs(
    procs: Sequence[Proc],
    node_env: Mapping[int, Mapping[str, str]],
    program: TaskProgram | None,
    inner: Sequence[str],
) -> tuple[list[Proc], list[str]]:
    """The tasks as the shell each one runs leaves them (its variables, set task by task; a
    wrapper not read: their GPUs unknown), and the notes that say so: srun's and mpirun's one
    reading of a task's program (``inner``: what the task runs after its shell)."""
    out, notes = list(procs), []
    if program is not None and identify(list(inner)) in (None, "python"):
        out, unresolved = with_task_env(out, node_env, program)
        notes.append(task_note(program, unresolved))
    if wrapper_env := unread_wrapper_env(inner, program):
        out = [replace(q, env={**q.env, **wrapper_env}) for q in out]
    return out, notes
