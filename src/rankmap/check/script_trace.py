"""What runs before the first CUDA use: the open world of "no device selected" (RM301).

A script with no sink of its own has selected no device only if nothing that runs before its
first CUDA use (or its ``init_process_group``) could have selected one. :func:`first_unfollowed`
walks the entry script in execution order - module-level statements, the bodies of the local
functions and classes it calls (the functions handed to ``mp.spawn``/``fire.Fire``/... included),
both branches of every ``if`` - up to that first CUDA use, and returns the first call into code
the analysis did not read: a name imported from a module that is neither in the files read nor
a module this package models or knows to leave the device alone (:data:`DEVICE_NEUTRAL`, the
standard library, :data:`~rankmap.check.script_models.TORCH_MODULES`), or a relative/local
import that was not found. Such a call may select the device (a repository's own
``init_distributed_mode``): the selection is then unknown, never an error.
"""

from __future__ import annotations

import ast
import builtins
import sys

from rankmap.check import script_models as models
from rankmap.check.script_ast import Frame, dotted, tail
from rankmap.check.script_flow import Flow
from rankmap.check.script_program import Module, Program, Scope
from rankmap.check.script_sinks import cuda_use

# Libraries that do not select a CUDA device (numerics, data, logging, configuration, command
# lines): a call into them is not a reason to doubt "no device selected". Anything not listed,
# not in the standard library and not modelled (script_models.TORCH_MODULES) is an unknown;
# so are hydra (``instantiate`` builds whatever a config names) and submitit (runs functions).
DEVICE_NEUTRAL = frozenset(
    {
        "numpy", "scipy", "pandas", "sklearn", "PIL", "cv2", "imageio", "skimage", "matplotlib",
        "seaborn", "h5py", "zarr", "xarray", "netCDF4", "pyarrow", "tqdm", "wandb", "mlflow",
        "tensorboard", "tensorboardX", "comet_ml", "neptune", "yaml", "omegaconf",
        "fire", "click", "typer", "jsonargparse", "absl", "ml_collections", "einops",
        "datasets", "tokenizers", "sentencepiece", "safetensors", "huggingface_hub", "evaluate",
        "psutil", "rich", "termcolor", "colorama", "tabulate", "requests", "boto3",
        "torchvision", "torchaudio", "torchtext", "torchdata", "torchmetrics", "peft", "nltk",
        "apex",
    }
)  # fmt: skip
_KNOWN = DEVICE_NEUTRAL | frozenset(models.TORCH_MODULES) | frozenset(sys.stdlib_module_names)
_BUILTINS = frozenset(dir(builtins))
MAX_CALL_DEPTH = 6


class _Stop(Exception):  # noqa: N818 - control flow, not an error
    """The walk reached the first CUDA use / NCCL init (``blocked`` None) or an unread call."""

    def __init__(self, blocked: str | None) -> None:
        self.blocked = blocked


def first_unfollowed(prog: Program, flow: Flow) -> str | None:
    """``path:line: `call` (...)`` of the first call into unread code before the first CUDA use
    (see the module docstring); None when the path there is read in full."""
    walk = _Walk(prog, flow)
    try:
        walk.body(prog.entry, prog.entry.tree, prog.entry.tree.body, 0)
    except _Stop as stop:
        return stop.blocked
    return None


class _Walk:
    def __init__(self, prog: Program, flow: Flow) -> None:
        self.prog, self.flow = prog, flow
        self.entered: set[int] = set()
        self.bound: dict[int, set[str]] = {}

    def body(self, mod: Module, scope: Scope, stmts: list[ast.stmt], depth: int) -> None:
        for stmt in stmts:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)) or self.flow.dead(mod, stmt):
                continue
            heads, blocks = _parts(stmt)
            for expr in heads:
                self.expr(mod, scope, expr, depth)
            for block in blocks:
                self.body(mod, scope, block, depth)

    def expr(self, mod: Module, scope: Scope, node: ast.AST, depth: int) -> None:
        events = [n for n in _nodes(node) if isinstance(n, ast.Call) or cuda_use(n)]
        events.sort(key=lambda n: (getattr(n, "end_lineno", 0), getattr(n, "end_col_offset", 0)))
        for ev in events:
            if cuda_use(ev) or (
                isinstance(ev, ast.Call)
                and tail(ev.func) in (*models.PROCESS_GROUP_INIT, "init_distributed")
            ):
                raise _Stop(None)
            assert isinstance(ev, ast.Call)
            self.call(mod, scope, ev, depth)

    def call(self, mod: Module, scope: Scope, call: ast.Call, depth: int) -> None:
        frame = Frame(mod, scope, call)
        targets = self.flow.resolve_function(call.func, frame) or self._class_init(mod, call)
        if not targets:
            if id(mod) not in self.bound:
                self.bound[id(mod)] = _bound_names(mod)
            blocked = _unread(mod, call, self.bound[id(mod)])
            if blocked is not None:
                raise _Stop(blocked)
        passed = [
            f
            for a in [*call.args, *(k.value for k in call.keywords)]
            if isinstance(a, (ast.Name, ast.Attribute))
            for f in self.flow.resolve_function(a, frame)
        ]
        if depth >= MAX_CALL_DEPTH:
            return
        for fmod, func in [*targets, *passed][:6]:
            if id(func) in self.entered:
                continue
            self.entered.add(id(func))
            self.body(fmod, func, func.body, depth + 1)

    def _class_init(
        self, mod: Module, call: ast.Call
    ) -> list[tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef]]:
        """``Cls(...)`` of a class defined in the files read -> its ``__init__``."""
        if not isinstance(call.func, ast.Name):
            return []
        name, where = call.func.id, mod
        if name in mod.imports:
            target, attr = mod.imports[name]
            linked = mod.links.get(target)
            if linked is None or attr is None:
                return []
            name, where = attr, linked
        for node in where.tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return [
                    (where, f)
                    for f in node.body
                    if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and f.name == "__init__"
                ]
        return []


def _unread(mod: Module, call: ast.Call, bound: set[str]) -> str | None:
    """Why ``call`` runs code the analysis did not read, or None (known, local or a method)."""
    root = dotted(call.func).split(".")[0].removesuffix("()")
    if not root or root in _BUILTINS and root not in mod.imports:
        return None
    if root in mod.imports:
        target, _ = mod.imports[root]
        module = target
    elif root not in bound:
        unread_stars = [s for s in mod.stars if s not in mod.links and not _known(s)]
        if not unread_stars:
            return None
        module = unread_stars[0]
    else:
        return None
    if module in mod.links or _known(module):
        return None
    what = "a relative import not found" if module.startswith(".") else "not in the files read"
    return f"{mod.where(call)}: `{mod.text(call)[:80]}` ({module}: {what})"


def _bound_names(mod: Module) -> set[str]:
    """Every name ``mod`` binds itself: assignments, functions, classes, parameters."""
    names = {n for _, n in mod.names} | set(mod.functions)
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _known(module: str) -> bool:
    return not module.startswith(".") and module.split(".")[0] in _KNOWN


def _parts(stmt: ast.stmt) -> tuple[list[ast.AST], list[list[ast.stmt]]]:
    """(expressions evaluated first, then the statement blocks in order) of ``stmt``."""
    if isinstance(stmt, (ast.If, ast.While)):
        return [stmt.test], [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        return [stmt.iter], [stmt.body, stmt.orelse]
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in stmt.items], [stmt.body]
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        handlers = [h.body for h in getattr(stmt, "handlers", [])]
        return [], [stmt.body, *handlers, stmt.orelse, stmt.finalbody]  # type: ignore[attr-defined]
    if isinstance(stmt, ast.Match):
        return [stmt.subject], [c.body for c in stmt.cases]
    return [stmt], []


def _nodes(node: ast.AST) -> list[ast.AST]:
    """The nodes of an expression or simple statement, not those of nested functions/classes."""
    out: list[ast.AST] = []
    todo = [node]
    while todo:
        cur = todo.pop()
        out.append(cur)
        for child in ast.iter_child_nodes(cur):
            if not isinstance(
                child, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            ):
                todo.append(child)
    return out


__all__ = ["DEVICE_NEUTRAL", "first_unfollowed"]
