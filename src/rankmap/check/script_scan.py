"""How a training script selects its CUDA device - read with ``ast`` only, never imported or run.

:func:`scan_script` (a text) and :func:`scan_path` (a file, with the local modules it imports)
find the sinks that decide a process's GPU (:mod:`~rankmap.check.script_models`), follow each
sink's value back to its sources (:mod:`~rankmap.check.script_flow`) and return a
:class:`DeviceSelection`: where the index comes from, whether it becomes the current device, and
the evidence later rules need before they call anything an error (CUDA use, the NCCL backend).
What could not be followed is listed in ``unresolved`` (``path:line: what``), never guessed.
Facts: reference/pytorch_nccl.md §1, launchers.md §2-9.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field, replace
from pathlib import Path

from rankmap.check import script_models as models
from rankmap.check.script_ast import dotted, tail
from rankmap.check.script_ranks import disagreeing_sink, find_local_rank_init
from rankmap.check.script_rendezvous import RendezvousWrite, find_rendezvous_writes
from rankmap.check.script_sinks import (
    Evidence,
    Sink,
    find_evidence,
    find_sinks,
    reachable,
    walk_nodes,
)
from rankmap.check.script_values import Choice, Dev, Num, Rank, Seq, Text, Unknown, Value
from rankmap.sources import Files

LOCAL_VARS = models.LOCAL_RANK_VARS
GLOBAL_VARS = models.GLOBAL_RANK_VARS


@dataclass(frozen=True)
class DeviceSelection:
    """Where a script's CUDA device index comes from (see module docstring)."""

    kind: str  # local_rank | global_rank | constant | local_rank_modulo | none | accelerate |
    #            framework | visible_devices | cpu | not_torch | assumed_local_rank | unknown
    env_vars: tuple[str, ...] = ()  # env variables read for the index, first found wins
    env_default: int | None = None  # value when none is set; None: KeyError when required
    env_required: bool = False  # os.environ["X"] (KeyError when missing)
    arg_dest: str | None = None  # argparse dest read for the index (local_rank)
    constant: int | None = None
    modulo: bool = False  # ... % torch.cuda.device_count()
    dist_rank: bool = False  # the runtime's own rank (dist.get_rank(), hvd, mp.spawn index)
    line: int | None = None
    call: str | None = None  # the source text of the selecting call
    declared_args: tuple[str, ...] = ()  # argparse spellings declared for a local rank
    arg_default: int | None = None
    tolerant_args: bool = False  # parse_known_args: unknown arguments are ignored
    strict_args: bool = False  # argparse parse_args() on sys.argv: an unknown argument stops it
    hydra_entry: str | None = None  # path:line of an @hydra.main entry (it rejects --local_rank)
    parse_error: str | None = None
    path: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)
    sets_current: bool = True  # the index becomes the current device (set_device, framework)
    scaled: bool = False  # the index is a rank combined with a factor the analysis assumed 1
    factor: int = 1  # index = rank * factor + offset (literal arithmetic), before the modulo
    offset: int = 0
    modulus: int = 0  # index % N with a literal N (after factor/offset), 0: none
    via_cvd: bool = False  # the index is the CUDA_VISIBLE_DEVICES entry at the rank (physical id)
    conditional: bool = False  # read on a path that may not run: a missing variable is no error
    framework: str | None = None  # the framework model that selects the device
    framework_source: str | None = None
    alternatives: tuple[tuple[tuple[str, ...], DeviceSelection], ...] = ()  # guarded branches
    uses_cuda: bool = True  # the files read use CUDA
    backend: str | None = None  # nccl | gloo | mpi | default | None (no init found)
    evidence: tuple[str, ...] = ()  # path:line of the CUDA use and backend found
    unresolved: tuple[str, ...] = ()  # path:line: what could not be followed
    where: str | None = None  # path:line of the sink
    origin: str = ""  # "path:line: text" where the selected index comes from (a rank read)
    blocked_by: str | None = None  # path:line: an unread call before the first CUDA use
    global_sink: tuple[str, str, str] | None = None  # (path:line, text, kind) of a later sink
    #            given the global rank where the deciding sink is local
    local_init: str | None = None  # path:line: init_process_group(rank=local, world_size=node's)
    local_init_needs: tuple[str, ...] = ()  # variables that must be set for it to be local
    rendezvous_writes: tuple[RendezvousWrite, ...] = ()  # MASTER_ADDR/PORT set before init
    spawn_where: str | None = None  # path:line of mp.spawn / start_processes: it starts workers
    spawn_count: int | None = None  # their number when read (a literal or a computed number)
    spawn_per_gpu: bool = False  # nprocs=torch.cuda.device_count(): one worker per visible GPU
    spawn_sets_local_rank: bool = False  # the workers get LOCAL_RANK (Lightning), not mp.spawn
    spawn_nodes: int | None = None  # Lightning's num_nodes= when read (1: not given)
    spawn_always: bool = False  # mp.spawn runs on every start of the script (no guard around it)
    spawn_env: tuple[str, int | None] | None = None  # (variable, default) the spawn count reads
    # after its own CUDA_VISIBLE_DEVICES (kind visible_devices), the index the script selects
    # among the GPUs it left visible (``set_device(local_rank)`` after ``CVD=str(local_rank)``)
    then: DeviceSelection | None = None

    @property
    def uses_index(self) -> bool:
        """True when the script selects a per-process index (not ``none``)."""
        return self.kind not in ("none",)

    @property
    def gpu_free(self) -> bool:
        """No GPU placement to judge: a CPU-only job or not a PyTorch script."""
        return self.kind in ("cpu", "not_torch")

    @property
    def nccl_evidence(self) -> bool:
        """The files read use CUDA and initialise NCCL (or the default backend, NCCL for CUDA)."""
        return self.uses_cuda and self.backend in ("nccl", "default")


ASSUMED = DeviceSelection(
    kind="assumed_local_rank",
    env_vars=("LOCAL_RANK",),
    env_required=True,
    call="torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
)


def scan_script(source: str, *, path: str | None = None) -> DeviceSelection:
    """Classify the device selection of ``source`` (a whole script or a snippet) alone."""
    return _scan(source, path, None)


def scan_path(
    path: Path,
    source: str,
    script_args: tuple[str, ...] | None = None,
    files: Files | None = None,
) -> DeviceSelection:
    """Classify ``source`` read from ``path``, following its imports of local modules (read
    through ``files``); ``script_args``: the arguments the launch gives the script."""
    return _scan(source, str(path), path, script_args, files)


def _scan(
    source: str,
    path: str | None,
    file: Path | None,
    script_args: tuple[str, ...] | None = None,
    files: Files | None = None,
) -> DeviceSelection:
    from rankmap.check.script_program import load_program, parse_module

    shown = path or "<script>"
    try:
        try:
            entry = parse_module(source, shown)
        except (SyntaxError, ValueError) as exc:
            try:
                entry = parse_module(textwrap.dedent(source), shown)
            except (SyntaxError, ValueError):
                line = getattr(exc, "lineno", None)
                msg = getattr(exc, "msg", str(exc)) + _python2_hint(source, line)
                return replace(ASSUMED, parse_error=f"{shown}:{line or '?'}: {msg}", path=path)
    except (MemoryError, RecursionError):  # CPython's parser on pathologically nested code
        return replace(ASSUMED, parse_error=f"{shown}: nested too deeply to parse", path=path)
    try:
        prog = load_program(entry, file, files)
        return _classify(prog, path, script_args)
    except (MemoryError, RecursionError):  # the analysis of deeply nested code
        return replace(ASSUMED, parse_error=f"{shown}: too deeply nested to follow", path=path)


# Python 2 statements Python 3 cannot parse: print/exec statements, ``except X, e``,
# ``raise E, msg``, backticks, ``<>``, ``0777`` octals, ``ur""`` strings.
_PY2_LINE = re.compile(
    r"^\s*(print\s+[^\s(=]|print\s*$|exec\s+[\"'\w]|except\s+[\w.()]+\s*,\s*\w+\s*:"
    r"|raise\s+[\w.]+\s*,)|`|<>|\b0\d+\b|\bur[\"']"
)


def _python2_hint(source: str, line: int | None) -> str:
    """`` (Python 2 syntax: ...)`` when the failing line is Python 2, else ``""``."""
    lines = source.splitlines()
    text = lines[line - 1] if line is not None and 0 < line <= len(lines) else ""
    if not _PY2_LINE.search(text):
        return ""
    return " (Python 2 syntax: the analysis parses Python 3 only)"


def _classify(
    prog: object, path: str | None, script_args: tuple[str, ...] | None
) -> DeviceSelection:
    from rankmap.check.script_flow import Flow
    from rankmap.check.script_program import Program

    assert isinstance(prog, Program)
    flow = Flow(prog, script_args)
    ev = find_evidence(prog, flow)
    sinks = find_sinks(prog, flow)
    tolerant, strict = _argv_parsing(prog)
    common: dict[str, object] = {
        "declared_args": flow.declared_local_rank_args(),
        "tolerant_args": tolerant,
        "strict_args": strict,
        "hydra_entry": _hydra_entry(prog),
        "path": path,
        "uses_cuda": ev.uses_cuda,
        "backend": ev.backend,
        "evidence": ev.lines,
    }
    common["rendezvous_writes"] = find_rendezvous_writes(prog, flow)
    common.update(_spawn_facts(flow))
    local_init = find_local_rank_init(prog, flow)
    if local_init is not None:
        common["local_init"], common["local_init_needs"] = local_init
    arg = next((s for s in sinks if isinstance(s.value, Rank) and s.value.arg_dest), None)
    if arg is not None and isinstance(arg.value, Rank):
        common["arg_default"] = arg.value.arg_default
    if not ev.torch_used and not sinks:
        return DeviceSelection(kind="not_torch", uses_cuda=False, path=path)
    if not sinks:
        if not ev.uses_cuda:
            return DeviceSelection(kind="cpu", **common)  # type: ignore[arg-type]
        notes = (ev.device_map_note,) if ev.device_map_note else ()
        sel = DeviceSelection(kind="none", notes=notes, **common)  # type: ignore[arg-type]
        return _open_world(sel, prog, flow)
    sink = sinks[0]
    sel = _from_value(sink.value, sink, common)
    if sel.kind == "visible_devices":
        sel = replace(sel, then=_selected_after_cvd(sinks[1:], common))
    other = disagreeing_sink(sinks)
    if other is not None:
        sel = replace(sel, global_sink=(other.where, other.text, other.kind))
    unresolved = tuple(dict.fromkeys([*_unknowns(sink.value), *prog.unresolved]))[:12]
    if not ev.uses_cuda and sel.kind in ("none", "constant", "unknown") and ev.backend != "nccl":
        return DeviceSelection(kind="cpu", **common)  # type: ignore[arg-type]
    return _open_world(replace(sel, unresolved=unresolved), prog, flow)


def _spawn_facts(flow: object) -> dict[str, object]:
    """Where the script starts its own workers and how many (DeviceSelection.spawn_*)."""
    from rankmap.check.script_flow import Flow
    from rankmap.check.script_values import DeviceCount, Num

    assert isinstance(flow, Flow)
    found = flow.spawned()
    if found is None:
        return {}
    where, count, sets_local_rank = found
    return {
        "spawn_nodes": flow.lightning_num_nodes() if sets_local_rank else None,
        "spawn_sets_local_rank": sets_local_rank,
        "spawn_where": where,
        "spawn_count": count.value if isinstance(count, Num) and 0 < count.value <= 4096 else None,
        "spawn_per_gpu": isinstance(count, DeviceCount),
        "spawn_always": not sets_local_rank and flow.spawn_always_reached(),
        "spawn_env": None if sets_local_rank else flow.spawn_env(),
    }


def _open_world(sel: DeviceSelection, prog: object, flow: object) -> DeviceSelection:
    """ "No device selected" needs the whole path to the first CUDA use read: a call into code
    not read on that path makes the selection unknown (RM030), never RM301."""
    if sel.kind != "none" or sel.alternatives:
        return sel
    from rankmap.check.script_flow import Flow
    from rankmap.check.script_program import Program
    from rankmap.check.script_trace import first_unfollowed

    assert isinstance(prog, Program) and isinstance(flow, Flow)
    blocked = first_unfollowed(prog, flow)
    if blocked is None:
        return sel
    unresolved = (blocked, *(u for u in sel.unresolved if u != blocked))[:12]
    return replace(sel, kind="unknown", blocked_by=blocked, unresolved=unresolved)


def _argv_parsing(prog: object) -> tuple[bool, bool]:
    """(tolerant, strict) of the command line in the code that can run: strict when an
    ``argparse.ArgumentParser``'s ``parse_args()`` reads sys.argv (no list given), so an unknown
    argument stops it; tolerant when only ``parse_known_args`` reads it (a pre-parser beside a
    strict ``parse_args()`` does not make the command line tolerant)."""
    from rankmap.check.script_program import Program

    assert isinstance(prog, Program)
    made = parsed = known = False
    for mod, roots in reachable(prog):
        for n in walk_nodes(roots):
            if isinstance(n, ast.Call):
                name = (
                    n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", "")
                )
                made = made or (name == "ArgumentParser" and "argparse" in mod.top_modules)
                parsed = parsed or (name == "parse_args" and not n.args and not n.keywords)
                known = known or name == "parse_known_args"
    strict = made and parsed
    return known and not strict, strict


def _hydra_entry(prog: object) -> str | None:
    """``path:line`` of a function of the entry script decorated with ``@hydra.main`` and called
    there, unless the files read rewrite ``sys.argv`` first (then Hydra may never see the
    launcher's argument)."""
    from rankmap.check.script_program import Program

    assert isinstance(prog, Program)
    entry = prog.entry
    hydra_names = {a for a, (m, attr) in entry.imports.items() if m == "hydra" and attr == "main"}
    called = {tail(n.func) for n in ast.walk(entry.tree) if isinstance(n, ast.Call)}
    found = None
    for node in ast.walk(entry.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in called:
            for dec in node.decorator_list:
                name = dotted(dec.func if isinstance(dec, ast.Call) else dec)
                if name == "hydra.main" or name in hydra_names:
                    found = entry.where(dec)
    if found is None:
        return None
    for _, roots in reachable(prog):
        if any(_writes_argv(n) for n in walk_nodes(roots)):
            return None
    return found


def _writes_argv(node: ast.AST) -> bool:
    """``sys.argv = ...``, ``sys.argv[...] = ...``, ``del sys.argv[...]``, ``sys.argv.pop()``..."""
    targets: list[ast.AST] = []
    if isinstance(node, (ast.Assign, ast.Delete)):
        targets = list(node.targets)
    elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
        targets = [node.target]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        targets = [node.func.value] if node.func.attr in _LIST_MUTATORS else []
    return any(
        dotted(t.value if isinstance(t, ast.Subscript) else t) == "sys.argv" for t in targets
    )


_LIST_MUTATORS = ("pop", "remove", "clear", "insert", "append", "extend")


def _from_value(v: Value, sink: Sink, common: dict[str, object]) -> DeviceSelection:
    base: dict[str, object] = {
        **common,
        "line": sink.line,
        "call": sink.text,
        "where": sink.where,
        "sets_current": sink.sets_current,
        "framework": sink.framework,
        "framework_source": sink.framework_source,
        "notes": sink.notes,
    }
    if isinstance(v, Choice):
        alts = tuple((g, _from_value(o, sink, common)) for g, o in v.options)
        first = alts[0][1]
        return replace(first, alternatives=alts if len(alts) > 1 else ())
    if isinstance(v, Dev):
        if v.index is None:
            return DeviceSelection(kind="none", **base)  # type: ignore[arg-type]
        return _from_value(v.index, sink, common)
    if isinstance(v, Seq) and v.items:
        return _from_value(v.items[0], sink, common)
    if isinstance(v, Num) and v.value < 0:  # set_device(-1) is a no-op: the default device stays
        return DeviceSelection(kind="none", **base)  # type: ignore[arg-type]
    if isinstance(v, Num):
        return DeviceSelection(kind="constant", constant=v.value, **base)  # type: ignore[arg-type]
    if isinstance(v, Rank):
        return _from_rank(v, sink, base)
    if isinstance(v, Text) and v.value in ("cpu", "meta"):
        return DeviceSelection(kind="cpu", **base)  # type: ignore[arg-type]
    from rankmap.check.script_values import ArgValue

    if isinstance(v, ArgValue) and isinstance(v.default, Num):
        return DeviceSelection(
            kind="constant",
            constant=v.default.value,
            arg_dest=v.dest,
            **base,  # type: ignore[arg-type]
        )
    return DeviceSelection(kind="unknown", **base)  # type: ignore[arg-type]


def _selected_after_cvd(later: list[Sink], common: dict[str, object]) -> DeviceSelection | None:
    """The first ``set_device`` / framework / ``device_id`` sink after the script's own
    CUDA_VISIBLE_DEVICES, when it is an index the analysis follows (a rank or a constant)."""
    sink = next(
        (s for s in later if s.kind in ("set_device", "framework", "device_id") and not s.fallback),
        None,
    )
    if sink is None:
        return None
    sel = _from_value(sink.value, sink, common)
    followed = ("local_rank", "local_rank_modulo", "global_rank", "constant")
    return sel if sel.kind in followed and not sel.alternatives else None


def _from_rank(v: Rank, sink: Sink, base: dict[str, object]) -> DeviceSelection:
    if sink.kind == "cvd":
        kind = "visible_devices"
    elif sink.framework == "accelerate" or sink.framework == "transformers Trainer":
        kind = "accelerate"
    elif v.scope == "global":
        kind = "global_rank"
    else:
        kind = "local_rank_modulo" if v.modulo else "local_rank"
    base = {**base}
    if v.arg_default is not None:
        base["arg_default"] = v.arg_default
    return DeviceSelection(
        kind=kind,
        env_vars=v.env_vars,
        env_default=v.env_default,
        env_required=v.env_required,
        arg_dest=v.arg_dest,
        modulo=v.modulo,
        dist_rank=v.by_process,
        scaled=v.scaled,
        factor=v.factor,
        offset=v.offset,
        modulus=v.modulus,
        via_cvd=v.via_cvd,
        conditional=v.conditional,
        origin=v.origin,
        **base,  # type: ignore[arg-type]
    )


def _unknowns(v: Value) -> list[str]:
    if isinstance(v, Unknown):
        return [v.why]
    if isinstance(v, Choice):
        return [w for _, o in v.options for w in _unknowns(o)]
    if isinstance(v, Dev) and v.index is not None:
        return _unknowns(v.index)
    if isinstance(v, Seq):
        return [w for i in v.items[:1] for w in _unknowns(i)]
    return []


__all__ = ["ASSUMED", "DeviceSelection", "Evidence", "scan_path", "scan_script"]
