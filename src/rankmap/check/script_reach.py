"""Whether a statement runs whenever the script gets there (read with ``ast`` only).

A finding that says a write decides the rendezvous, or that a rank is given to
``init_process_group``, needs the call to run: :func:`runs_whenever_reached` is true when no
condition the analysis cannot decide stands between the call and its function's entry - an
``if`` (the ``__main__`` test aside), an earlier ``if`` that returns or raises, an ``except``
handler - and the function is used at least once that way too (called, or handed on:
``mp.spawn(fn)``, ``Process(target=fn)``). A function nobody uses is no evidence.
"""

from __future__ import annotations

import ast

from rankmap.check.script_ast import is_main_test, stmt_of, tail
from rankmap.check.script_flow import Flow
from rankmap.check.script_program import Module, Program, except_handler
from rankmap.check.script_sinks import undecided_ifs


def runs_whenever_reached(
    mod: Module, node: ast.AST, flow: Flow, prog: Program, *, inside: bool = True
) -> bool:
    """No condition the analysis cannot decide stands between ``node`` and its function's entry
    (the ``__main__`` test aside: an ``if``, an earlier ``if`` that returns or raises, an
    ``except`` handler), and the function is used at least once that way too - called, or handed
    on (``mp.spawn(fn)``, ``Process(target=fn)``). A function never used is not evidence, nor is
    ``if "RANK" not in os.environ: setup()``. ``inside=False`` asks about the uses only: the
    conditions inside the function are taken as met (``if distributed: init_process_group(...)``
    is what a multi-process launch runs)."""
    if inside and not _unconditional(mod, node, flow):
        return False
    scope = mod.scope_of.get(id(stmt_of(mod, node)), mod.tree)
    name = getattr(scope, "name", None)
    if not name:
        return True  # module level
    uses = [(m, ref) for m, ref in _references(prog, name) if not _inside(m, ref, scope)]
    return any(_unconditional(m, ref, flow) for m, ref in uses)


def _references(prog: Program, name: str) -> list[tuple[Module, ast.AST]]:
    """Calls of ``name`` (``fn(...)``, ``self.fn(...)``) and hand-ons to a call (``mp.spawn(fn)``,
    ``Process(target=fn)``) anywhere in the files read; a mention in a table is neither."""
    out: list[tuple[Module, ast.AST]] = []
    for mod in prog.modules:
        for node in ast.walk(mod.tree):
            if _loads(node, name) and _called_or_handed_on(mod, node):
                out.append((mod, node))
    return out


def _called_or_handed_on(mod: Module, node: ast.AST) -> bool:
    parent = mod.parent.get(id(node))
    if isinstance(parent, ast.keyword):
        return isinstance(mod.parent.get(id(parent)), ast.Call)
    return isinstance(parent, ast.Call) and (parent.func is node or node in parent.args)


def _loads(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, ast.Load)
    return isinstance(node, ast.Attribute) and node.attr == name


def _inside(mod: Module, node: ast.AST, scope: object) -> bool:
    cur = mod.parent.get(id(node))
    while cur is not None:
        if cur is scope:
            return True
        cur = mod.parent.get(id(cur))
    return False


def _unconditional(mod: Module, node: ast.AST, flow: Flow) -> bool:
    if except_handler(mod, node) is not None or undecided_ifs(mod, node, flow):
        return False
    return not _early_exit_before(mod, node)


def _early_exit_before(mod: Module, node: ast.AST) -> bool:
    """An earlier ``if`` in one of ``node``'s enclosing blocks (in its function) leaves it:
    ``if "LOCAL_RANK" in os.environ: init(); return`` before a fallback set-up."""
    child: ast.AST = stmt_of(mod, node)
    while True:
        block = block_holding(mod, child) or []
        before = block[: next((i for i, s in enumerate(block) if s is child), 0)]
        if any(_exits_early(s) for s in before):
            return True
        parent = mod.parent.get(id(child))
        if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False
        child = parent


def _exits_early(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.If) or is_main_test(stmt.test):
        return False
    return any(_leaves(n) for n in ast.walk(stmt))


def _leaves(node: ast.AST) -> bool:
    if isinstance(node, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
        return True
    return isinstance(node, ast.Call) and tail(node.func) in ("exit", "_exit", "quit")


def block_holding(mod: Module, stmt: ast.AST) -> list[ast.stmt] | None:
    parent = mod.parent.get(id(stmt))
    if parent is None:
        return None
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is stmt for s in block):
            return block
    return None


__all__ = ["block_holding", "runs_whenever_reached"]
