"""Small pure helpers of the script data flow: where an expression is evaluated (:class:`Frame`),
dotted names, environment reads, and the value operations the evaluator shares."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace

from rankmap.check import script_models as models
from rankmap.check.script_program import Binding, Module, Scope
from rankmap.check.script_values import (
    Choice,
    Rank,
    Unknown,
    Value,
    VisibleList,
    open_world,
    scaled,
)


@dataclass(frozen=True)
class Frame:
    """Where an expression is evaluated: module, scope, the node used at, parameter bindings."""

    mod: Module
    scope: Scope
    node: ast.AST
    bound: tuple[tuple[str, Value], ...] = ()

    @property
    def line(self) -> int:
        return getattr(self.node, "lineno", 0) or 0

    def where(self, node: ast.AST | None = None) -> str:
        return self.mod.where(node or self.node)

    @classmethod
    def at(cls, mod: Module, node: ast.AST) -> Frame:
        """The frame of ``node`` in its own scope (a call, an ``if``): where it is evaluated."""
        return cls(mod, mod.scope_of.get(id(stmt_of(mod, node)), mod.tree), node)


def is_main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"``: the test every script run as a program passes."""
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and len(test.comparators) == 1
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value == "__main__"
    )


def dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Call):
        return f"{dotted(node.func)}()"
    return ""


def tail(node: ast.AST) -> str:
    return dotted(node).rsplit(".", 1)[-1]


def env_read(node: ast.AST) -> tuple[str, ast.expr | None, bool] | None:
    """``os.environ["X"]`` / ``os.environ.get("X", d)`` / ``os.getenv("X", d)`` -> (X, d, required)."""
    if isinstance(node, ast.Subscript) and dotted(node.value).endswith("environ"):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, None, True
    if isinstance(node, ast.Call) and node.args:
        name = dotted(node.func)
        key = node.args[0]
        if (
            name.endswith(("environ.get", "getenv", "environ.setdefault"))
            and isinstance(key, ast.Constant)
            and isinstance(key.value, str)
        ):
            return key.value, node.args[1] if len(node.args) > 1 else None, False
    return None


def index_into(base: Value, idx: Value, where: str, text: str) -> Value:
    """``base[idx]``: a CUDA_VISIBLE_DEVICES entry, a rank-indexed list, or unknown."""
    if isinstance(base, Choice):
        return Choice(tuple((g, index_into(o, idx, where, text)) for g, o in base.options))
    if isinstance(base, VisibleList) and isinstance(idx, Choice):
        return Choice(tuple((g, index_into(base, o, where, text)) for g, o in idx.options))
    if isinstance(base, VisibleList) and isinstance(idx, Rank):
        return replace(idx, via_cvd=True)
    if isinstance(idx, (Rank, Choice)) and is_rank(idx):
        return scaled(idx)
    return Unknown(f"{where}: `{text}` not followed")


def is_name(node: ast.AST, name: str | None) -> bool:
    return name is not None and isinstance(node, ast.Name) and node.id == name


def negate(var: str) -> str:
    return var[1:] if var.startswith("!") else f"!{var}"


def guard_holds(guard: Iterable[str], get: Callable[[str], str | None]) -> bool:
    """Every variable of ``guard`` is set (``"X"``) or unset (``"!X"``) as ``get`` reads it."""
    return all((get(v[1:]) is None) if v.startswith("!") else (get(v) is not None) for v in guard)


def is_environ(node: ast.AST) -> bool:
    name = dotted(node)
    return name.endswith("environ") or name.endswith("environ.keys()")


def is_env_membership(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In)
        and is_environ(node.comparators[0])
    )


def arith(op: ast.operator, a: int, b: int) -> int:
    if isinstance(op, ast.Add):
        return a + b
    if isinstance(op, ast.Sub):
        return a - b
    if isinstance(op, ast.Mult):
        return a * b
    if isinstance(op, ast.Mod):
        return a % b
    if isinstance(op, ast.FloorDiv):
        return a // b
    raise TypeError(type(op).__name__)


def is_rank(v: Value) -> bool:
    if isinstance(v, Rank):
        return True
    if isinstance(v, Choice):
        return any(is_rank(o) for _, o in v.options)
    return False


def combine(options: list[tuple[tuple[str, ...], Value]]) -> Value:
    guarded = [(g, v) for g, v in options if g]
    loose = [v for g, v in options if not g]
    fallback = open_world(loose) if loose else None
    if not guarded:
        return fallback if fallback is not None else Unknown("no value")
    if fallback is None:
        return Choice(tuple(guarded))
    return Choice((*guarded, ((), fallback)))


def param_names(func: ast.AST) -> list[str]:
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return []
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def default_of(func: ast.AST, name: str) -> ast.expr | None:
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return None
    pos = [*args.posonlyargs, *args.args]
    for a, d in zip(pos[len(pos) - len(args.defaults) :], args.defaults, strict=True):
        if a.arg == name:
            return d
    for kw, kd in zip(args.kwonlyargs, args.kw_defaults, strict=False):
        if kw.arg == name:
            return kd
    return None


def stmt_of(mod: Module, node: ast.AST) -> ast.AST:
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = mod.parent.get(id(cur))
    return cur if cur is not None else node


def target_base(b: Binding) -> str:
    stmt = b.stmt
    targets = stmt.targets if isinstance(stmt, ast.Assign) else [getattr(stmt, "target", None)]
    for t in targets:
        if isinstance(t, ast.Attribute):
            return dotted(t.value)
    return ""


def model_rank(model: models.FrameworkModel, where: str) -> Rank:
    return Rank(
        model.scope,
        model.env_vars,
        0 if model.env_vars else None,
        modulo=model.modulo,
        by_process=model.by_process,
        origin=f"{where}: {model.name}",
    )


def env_write(node: ast.AST) -> list[tuple[str, ast.expr, bool]]:
    """What ``node`` writes into the process environment: (variable, value, overrides) for
    ``os.environ["X"] = v``, ``os.environ.update(X=v)`` / ``update({"X": v})`` (override) and
    ``os.environ.setdefault("X", v)`` (only when X is unset)."""
    out: list[tuple[str, ast.expr, bool]] = []
    if isinstance(node, ast.Assign):
        for target in node.targets:
            read = env_read(target)
            if read is not None and read[2]:
                out.append((read[0], node.value, True))
    elif isinstance(node, ast.Call):
        name = dotted(node.func)
        if name.endswith("environ.setdefault") and len(node.args) == 2:
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                out.append((key.value, node.args[1], False))
        elif name.endswith("environ.update"):
            out += [(k.arg, k.value, True) for k in node.keywords if k.arg]
            for arg in node.args[:1]:
                if isinstance(arg, ast.Dict):
                    out += [
                        (k.value, v, True)
                        for k, v in zip(arg.keys, arg.values, strict=True)
                        if isinstance(k, ast.Constant) and isinstance(k.value, str)
                    ]
    return out


def guarded_env_return(stmt: ast.stmt) -> list[str] | None:
    """The variables of ``if "X" in os.environ: return <reads X>`` or of ``for key in ("X",
    "Y"): if key in os.environ: return <reads key>``, in order; None for any other statement."""
    if isinstance(stmt, ast.If) and not stmt.orelse and is_env_membership(stmt.test):
        key = stmt.test.left  # type: ignore[attr-defined]
        ret = stmt.body[-1] if stmt.body else None
        if (
            isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and isinstance(ret, ast.Return)
            and ret.value is not None
            and _returns_var(ret.value, key.value, None)
        ):
            return [key.value]
        return None
    if (
        isinstance(stmt, ast.For)
        and isinstance(stmt.target, ast.Name)
        and isinstance(stmt.iter, (ast.Tuple, ast.List))
        and all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in stmt.iter.elts)
        and len(stmt.body) == 1
        and not stmt.orelse
    ):
        inner = stmt.body[0]
        var = stmt.target.id
        ret = inner.body[-1] if isinstance(inner, ast.If) and inner.body else None
        if (
            isinstance(inner, ast.If)
            and not inner.orelse
            and is_env_membership(inner.test)
            and is_name(inner.test.left, var)  # type: ignore[attr-defined]
            and isinstance(ret, ast.Return)
            and ret.value is not None
            and _returns_var(ret.value, None, var)
        ):
            return [e.value for e in stmt.iter.elts]  # type: ignore[attr-defined]
    return None


def _returns_var(value: ast.expr, key: str | None, loop_var: str | None) -> bool:
    """Whether a return reads the guarded variable itself: ``os.environ["X"]`` (``key``) or
    ``os.environ[k]`` of the loop's ``k`` (``loop_var``), as the value or inside ``int()``
    (review 20: a guard on X that returns RANK, or 0, is no read of X)."""
    node = value
    while isinstance(node, ast.Call) and dotted(node.func) in ("int", "str") and node.args:
        node = node.args[0]
    if key is not None:
        read = env_read(node)
        return read is not None and read[0] == key
    if isinstance(node, ast.Subscript) and dotted(node.value).endswith("environ"):
        return is_name(node.slice, loop_var)
    if (
        isinstance(node, ast.Call)
        and node.args
        and dotted(node.func).endswith(("environ.get", "getenv"))
    ):
        return is_name(node.args[0], loop_var)
    return False
