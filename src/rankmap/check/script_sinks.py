"""Sinks of device selection in a script's reachable code, and the evidence rules need.

A sink is where a value decides the GPU of a process (:mod:`~rankmap.check.script_models`):
writes to ``os.environ["CUDA_VISIBLE_DEVICES"]``, ``set_device``, framework calls that set the
device themselves, ``init_process_group(device_id=...)``, DDP/FSDP ``device_ids``/``device_id``,
and tensors/modules moved with ``.to(...)``/``.cuda(...)``/``device=``. Only the last three leave
the current device at cuda:0 (``sets_current`` False). Reachable code: the whole entry script, the
module-level code of the local modules it imports and the functions/classes of those modules that
reachable code names.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from rankmap.check import script_models as models
from rankmap.check.script_ast import is_main_test
from rankmap.check.script_flow import Flow, Frame, dotted, model_rank, tail
from rankmap.check.script_program import Module, Program, enclosing_ifs, except_handler
from rankmap.check.script_values import (
    ArgValue,
    Choice,
    Dev,
    Rank,
    Seq,
    Text,
    Unknown,
    Value,
    as_device,
    best,
    conditional,
    score,
)

# sink class -> priority (lower wins) and whether it makes the index the current device
_CLASSES = {"cvd": 0, "set_device": 1, "framework": 2, "device_id": 3, "wrapper": 4, "tensor": 5}
_NOT_CUDA_USE = ("is_available", "device_count", "manual_seed", "manual_seed_all", "empty_cache")


@dataclass(frozen=True)
class Sink:
    kind: str  # a key of _CLASSES
    value: Value
    line: int
    text: str
    where: str
    sets_current: bool
    framework: str | None = None
    framework_source: str | None = None
    notes: tuple[str, ...] = ()
    fallback: bool = False  # inside an ``except`` block: runs only when its ``try`` fails


@dataclass(frozen=True)
class Evidence:
    torch_used: bool
    uses_cuda: bool
    backend: str | None  # nccl | gloo | mpi | default | None
    lines: tuple[str, ...]
    device_map_note: str | None


def reachable(prog: Program) -> list[tuple[Module, list[ast.AST]]]:
    """(module, the nodes whose code can run): see the module docstring."""
    names: set[str] = set()
    out: list[tuple[Module, list[ast.AST]]] = [(prog.entry, [prog.entry.tree])]
    _names_in(prog.entry.tree, names)
    others = prog.modules[1:]
    roots: dict[int, list[ast.AST]] = {
        id(m): [
            s
            for s in m.tree.body
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
        for m in others
    }
    for m in others:
        for s in roots[id(m)]:
            _names_in(s, names)
    added: set[int] = set()
    for _ in range(6):
        grew = False
        for m in others:
            for s in m.tree.body:
                if id(s) in added:
                    continue
                named = isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                if named and getattr(s, "name", "") in names:
                    added.add(id(s))
                    roots[id(m)].append(s)
                    _names_in(s, names)
                    grew = True
        if not grew:
            break
    out += [(m, roots[id(m)]) for m in others]
    return out


def _names_in(node: ast.AST, names: set[str]) -> None:
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            names.add(n.id)
        elif isinstance(n, ast.Attribute):
            names.add(n.attr)


def walk_nodes(roots: list[ast.AST]) -> list[ast.AST]:
    return [n for r in roots for n in ast.walk(r)]


def find_sinks(prog: Program, flow: Flow) -> list[Sink]:
    """The deciding sinks, the most authoritative first (see :data:`_CLASSES`)."""
    found: list[Sink] = []
    imported = prog.top_modules
    for mod, roots in reachable(prog):
        for node in walk_nodes(roots):
            if isinstance(node, (ast.Assign, ast.Call)) and flow.dead(mod, node):
                continue
            if isinstance(node, ast.Assign):
                found += _cvd_write(node, mod, flow)
            elif isinstance(node, ast.Call):
                found += _call_sinks(node, mod, flow, imported)
    return _ranked(found)


def _ranked(found: list[Sink]) -> list[Sink]:
    """The deciding sink first: the highest class with a followed value. A class whose values
    could not be followed gives way only to a per-rank value of a lower class (kept as the current
    device), never to a constant or the default device."""
    by_class: dict[str, list[Sink]] = {}
    for s in found:
        by_class.setdefault(s.kind, []).append(s)
    blocked: Sink | None = None
    for kind in sorted(by_class, key=_CLASSES.__getitem__):
        # an ``except`` block's selection is the fallback of its ``try``: it decides only where
        # the class has nothing else (review 37: `except ValueError: set_device(0)` was taken)
        group = [s for s in by_class[kind] if not s.fallback] or by_class[kind]
        known = [s for s in group if not isinstance(s.value, Unknown) and score(s.value) > 0]
        top = max(known, key=lambda s: score(s.value)) if known else None
        if top is None:
            blocked = blocked or group[0]
            continue
        if blocked is not None:
            if score(top.value) < 4:
                top = blocked
            elif blocked.sets_current and not top.sets_current:
                top = Sink(**{**top.__dict__, "sets_current": True})
        return [top, *[s for s in found if s is not top]]
    if blocked is not None:
        return [blocked, *[s for s in found if s is not blocked]]
    return []


def frame_at(mod: Module, node: ast.AST) -> Frame:
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = mod.parent.get(id(cur))
    scope = mod.scope_of.get(id(cur), mod.tree) if cur is not None else mod.tree
    return Frame(mod, scope, node)


def _sink(kind: str, node: ast.AST, mod: Module, value: Value, **kw: object) -> Sink:
    return Sink(
        kind,
        value,
        getattr(node, "lineno", 0),
        mod.text(node),
        mod.where(node),
        kind in ("cvd", "set_device", "framework"),
        fallback=except_handler(mod, node) is not None,
        **kw,  # type: ignore[arg-type]
    )


def _cvd_write(node: ast.Assign, mod: Module, flow: Flow) -> list[Sink]:
    out = []
    for t in node.targets:
        if isinstance(t, ast.Subscript) and dotted(t.value).endswith("environ"):
            key = t.slice
            if isinstance(key, ast.Constant) and key.value == models.CVD:
                v = flow.value(node.value, frame_at(mod, node))
                if _rank_like(v):
                    out.append(_sink("cvd", node, mod, v))
    return out


def _call_sinks(node: ast.Call, mod: Module, flow: Flow, imported: frozenset[str]) -> list[Sink]:
    found = _call_sinks_of(node, mod, flow, imported)
    spans = undecided_ifs(mod, node, flow)
    if found and spans:
        # ``if "LOCAL_RANK" in os.environ: set_device(...)``, ``if local_rank != -1: ...``: the
        # call runs only where its test holds; a variable read inside that branch that is
        # missing means the branch did not run, not a crash (review 24). A read before the
        # ``if`` (module level) still raises where it stands (review 25).
        found = [
            Sink(**{**s.__dict__, "value": _read_inside(s.value, mod.path, spans)}) for s in found
        ]
    return found


def undecided_ifs(mod: Module, node: ast.AST, flow: Flow) -> list[tuple[int, int]]:
    """The line spans of the enclosing ``if`` statements (the ``__main__`` test aside) whose
    test the analysis cannot decide."""
    spans = []
    for test_if, in_body in enclosing_ifs(mod, node):
        if is_main_test(test_if.test):
            continue
        if flow.decide(test_if.test, frame_at(mod, test_if)) is not in_body:
            spans.append((test_if.lineno, getattr(test_if, "end_lineno", None) or test_if.lineno))
    return spans


def _read_inside(v: Value, path: str, spans: list[tuple[int, int]]) -> Value:
    """``v`` made conditional when its variable is read inside one of ``spans`` of ``path`` (or
    where it is read is not known)."""
    if isinstance(v, Dev) and v.index is not None:
        return Dev(_read_inside(v.index, path, spans))
    if isinstance(v, Choice):
        return Choice(tuple((g, _read_inside(o, path, spans)) for g, o in v.options))
    if not isinstance(v, Rank):
        return conditional(v)
    where, _, line = v.origin.partition(": ")[0].rpartition(":")
    outside = where == path and line.isdecimal() and not any(a <= int(line) <= b for a, b in spans)
    # a read before the if raises there; one with a sentinel default (-1) is what the if tests
    if outside and not (v.env_default is not None and v.env_default < 0):
        return v
    return conditional(v)


def _call_sinks_of(node: ast.Call, mod: Module, flow: Flow, imported: frozenset[str]) -> list[Sink]:
    t = tail(node.func)
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    frame = frame_at(mod, node)
    if t in models.SET_DEVICE and node.args:
        return [_sink("set_device", node, mod, as_device(flow.value(node.args[0], frame)))]
    if t in models.PROCESS_GROUP_INIT and "device_id" in kw:
        return [_sink("device_id", node, mod, as_device(flow.value(kw["device_id"], frame)))]
    model = models.framework_for(t, imported)
    if model is not None and not flow.resolve_function(node.func, frame):
        v = Dev(model_rank(model, mod.where(node)))
        notes = (model.note,) if model.note else ()
        return [
            _sink(
                "framework",
                node,
                mod,
                v,
                framework=model.name,
                framework_source=model.source,
                notes=notes,
            )
        ]
    if t in models.WRAPPERS_DEVICE_IDS:
        for key in ("device_ids", "device_id", "output_device"):
            if key in kw:
                return [_sink("wrapper", node, mod, as_device(flow.value(kw[key], frame)))]
        return []
    if t in models.TENSOR_MOVES and isinstance(node.func, ast.Attribute):
        if t == "cuda":
            moved: Value = as_device(flow.value(node.args[0], frame)) if node.args else Dev(None)
            return [_sink("tensor", node, mod, moved)]
        target = node.args[0] if node.args else kw.get("device")
        if target is not None:
            dest = as_device(flow.value(target, frame))
            if isinstance(dest, (Dev, Choice)) and _is_cuda(dest):
                return [_sink("tensor", node, mod, dest)]
    return []


def _rank_like(v: Value) -> bool:
    if isinstance(v, Rank):
        return True
    if isinstance(v, Choice):
        return any(_rank_like(o) for _, o in v.options)
    if isinstance(v, Dev) and v.index is not None:
        return _rank_like(v.index)
    return False


def _is_cuda(v: Value) -> bool:
    if isinstance(v, Dev):
        return True
    if isinstance(v, Choice):
        return any(_is_cuda(o) for _, o in v.options)
    return False


def find_evidence(prog: Program, flow: Flow) -> Evidence:
    """Whether the reachable code uses torch, CUDA, and which process-group backend."""
    lines: list[str] = []
    uses_cuda = False
    backends: list[str] = []
    dm_note = None
    imported = prog.top_modules
    torch_used = bool(imported & set(models.TORCH_MODULES))
    for mod, roots in reachable(prog):
        for node in walk_nodes(roots):
            if not uses_cuda and cuda_use(node):
                uses_cuda = True
                lines.append(f"{mod.where(node)}: uses CUDA (`{mod.text(node)[:60]}`)")
            if isinstance(node, ast.Call):
                t = tail(node.func)
                if t in models.PROCESS_GROUP_INIT or t == "init_distributed":
                    b = _backend(node, mod, flow)
                    backends.append(b)
                    lines.append(f"{mod.where(node)}: backend {b}")
                elif models.framework_for(t, imported) is not None:
                    backends.append("nccl")
                    uses_cuda = True
                if dm_note is None and any(
                    k.arg == "device_map"
                    and isinstance(k.value, ast.Constant)
                    and k.value.value == "auto"
                    for k in node.keywords
                ):
                    dm_note = (
                        f"{mod.where(node)}: device_map='auto' spreads one model over every visible "
                        "GPU of each process; it selects no device per rank."
                    )
    known = [b for b in backends if b != "unknown"]
    backend = (
        "nccl"
        if "nccl" in backends
        else "default"
        if "default" in backends
        else known[0]
        if known and len(known) == len(backends)
        else None
    )
    torch_used = (
        torch_used
        or uses_cuda
        or any(
            isinstance(n, ast.Name) and n.id in ("torch", "dist", "deepspeed")
            for m in prog.modules
            for n in ast.walk(m.tree)
        )
    )
    return Evidence(torch_used, uses_cuda, backend, tuple(lines[:6]), dm_note)


def cuda_use(node: ast.AST) -> bool:
    """``node`` shows the script uses CUDA (a "cuda" string, ``.cuda()``, ``torch.cuda.*``...)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        s = node.value
        return s == "cuda" or (s.startswith("cuda:") and len(s) < 12) or s == "nccl"
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]
        return isinstance(head, ast.Constant) and str(head.value).startswith("cuda")
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "cuda"
    ):
        return True
    if isinstance(node, ast.Attribute) and dotted(node.value).endswith("torch.cuda"):
        return node.attr not in _NOT_CUDA_USE
    return isinstance(node, ast.keyword) and node.arg in ("device_ids", "device_map")


def _backend(node: ast.Call, mod: Module, flow: Flow) -> str:
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    expr = node.args[0] if node.args else kw.get("backend", kw.get("dist_backend"))
    if expr is None:
        return "nccl" if tail(node.func) == "init_distributed" else "default"
    if isinstance(expr, ast.Attribute) and expr.attr.lower() in ("nccl", "gloo", "mpi"):
        return expr.attr.lower()
    if isinstance(expr, ast.Call) and tail(expr.func) == "get_default_backend_for_device":
        return "default"
    texts = _texts(flow.value(expr, frame_at(mod, node)))
    for name in ("nccl", "gloo", "mpi", "default"):
        if any(name in t.lower() for t in texts):
            return name
    return "unknown"


def _texts(v: Value) -> list[str]:
    if isinstance(v, Text):
        return [v.value]
    if isinstance(v, ArgValue) and v.default is not None:
        return _texts(v.default)
    if isinstance(v, Choice):
        return [t for _, o in v.options for t in _texts(o)]
    if isinstance(v, Seq):
        return [t for i in v.items for t in _texts(i)]
    return []


__all__ = [
    "Evidence",
    "frame_at",
    "walk_nodes",
    "reachable",
    "Sink",
    "best",
    "cuda_use",
    "find_evidence",
    "find_sinks",
]
