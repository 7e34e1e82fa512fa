"""Environment guards of the script data flow: which variables the ``if`` tests around an
assignment require (``"!X"``: X unset), and the argparse declarations the flow reads."""

from __future__ import annotations

import ast
from dataclasses import replace

from rankmap.check.script_ast import (
    Frame,
    env_read,
    env_write,
    is_env_membership,
    is_environ,
    is_main_test,
    negate,
    tail,
)
from rankmap.check.script_program import Module, Program, Scope, enclosing_ifs
from rankmap.check.script_values import ArgValue, Nothing, Num, Rank, Text, Value


class Guards:
    """State shared by the evaluator, argparse declarations and environment guards."""

    def __init__(self, prog: Program, script_args: tuple[str, ...] | None = None) -> None:
        self.prog = prog
        self.script_args = script_args  # the arguments the launch gives the script, when known
        self.unresolved: list[str] = []
        self._active: set[tuple[int, int]] = set()
        self._depth = 0
        self._steps = 0  # values visited by the current question (script_flow.MAX_STEPS)
        self._calls: dict[str, list[tuple[Module, ast.Call]]] = {}
        self._args: dict[str, tuple[Module, ast.Call]] = {}
        self._referenced: set[str] = set()  # every name read anywhere (a call, a callback)
        # os.environ writes of the script itself: variable -> (module, value, overrides)
        self._env_writes: dict[str, list[tuple[Module, ast.expr, bool]]] = {}
        self._env_resolving: set[str] = set()
        for mod in prog.modules:
            for node in ast.walk(mod.tree):
                for var, value, overrides in env_write(node):
                    self._env_writes.setdefault(var, []).append((mod, value, overrides))
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                    self._referenced.add(node.id)
                elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                    self._referenced.add(node.attr)
                if isinstance(node, ast.Call):
                    self._calls.setdefault(tail(node.func), []).append((mod, node))
                    if tail(node.func) == "add_argument":
                        self._argparse(mod, node)

    # --- argparse ------------------------------------------------------------------------
    def _argparse(self, mod: Module, call: ast.Call) -> None:
        opts = [
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            self._args.setdefault(dest.value, (mod, call))
            return
        longs = [o for o in opts if o.startswith("--")] or opts
        for o in longs[:1]:
            self._args.setdefault(o.lstrip("-").replace("-", "_"), (mod, call))

    def _passed(self, call: ast.Call) -> str | None:
        """The value the launch command gives this argparse option (``"1"`` for a flag)."""
        opts = [
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        args = list(self.script_args or ())
        for i, a in enumerate(args):
            name, eq, value = a.partition("=")
            if name in opts and name.startswith("-"):
                if _action(call) in ("store_true", "store_false"):
                    return "0" if _action(call) == "store_false" else "1"
                if eq:
                    return value
                return args[i + 1] if i + 1 < len(args) else None
        return None

    def always_reached(self, mod: Module, node: ast.AST, depth: int = 3) -> bool:
        """``node`` runs on every start of the script: no ``if`` (other than the ``__main__``
        test), ``try`` handler or loop around it, and, inside a function, every call of that
        function (there is one at least) always reached too. A call reached only from code
        not read, or through a callback, is not."""
        child: ast.AST = node
        cur = mod.parent.get(id(node))
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if isinstance(cur, ast.If) and child is not cur.test and not is_main_test(cur.test):
                return False
            if isinstance(cur, (ast.ExceptHandler, ast.For, ast.While, ast.IfExp, ast.BoolOp)):
                return False
            child, cur = cur, mod.parent.get(id(cur))
        if cur is None:
            return True
        sites = [(m, c) for m, c in self._calls.get(cur.name, []) if c is not node]
        if depth <= 0 or not sites or cur.name in ("__init__", "forward"):
            return False
        return all(self.always_reached(m, c, depth - 1) for m, c in sites)

    def dead(self, mod: Module, node: ast.AST) -> bool:
        """``node`` sits in a branch the launch's own arguments rule out."""
        if self.script_args is None:
            return False
        for test_if, in_body in enclosing_ifs(mod, node):
            d = self.decide(
                test_if.test,
                Frame.at(mod, test_if),
            )
            if d is not None and d != in_body:
                return True
        return False

    def decide(self, test: ast.AST, frame: Frame) -> bool | None:
        """The truth of an ``if`` test when it rests only on argparse values of the launch."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self.decide(test.operand, frame)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            parts = [self.decide(v, frame) for v in test.values]
            short = isinstance(test.op, ast.Or)  # the value that decides alone
            if short in parts:
                return short
            return None if None in parts else not short
        if isinstance(test, ast.Attribute) and test.attr in self._args:
            v = self.arg_value(test.attr, frame)
            if isinstance(v, Num):
                return bool(v.value)
            if isinstance(v, Nothing):
                return False
            return None
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
            and isinstance(test.left, ast.Attribute)
            and test.left.attr in self._args
        ):
            v = self.value(test.left, frame)
            if isinstance(v, (Nothing, Num, Text, Rank)):
                is_none = isinstance(v, Nothing)
                return is_none if isinstance(test.ops[0], ast.Is) else not is_none
        return None

    def declared_local_rank_args(self) -> tuple[str, ...]:
        found: list[str] = []
        for dest, (_, call) in self._args.items():
            if dest == "local_rank" or _local_rank_option(call):
                found += [
                    a.value
                    for a in call.args
                    if isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and a.value.startswith("--")
                ]
        return tuple(found)

    def arg_value(self, dest: str, frame: Frame) -> Value | None:
        if dest not in self._args:
            return None
        mod, call = self._args[dest]
        dflt_node = next((k.value for k in call.keywords if k.arg == "default"), None)
        where = Frame.at(mod, call)
        default = self.value(dflt_node, where) if dflt_node is not None else None
        # `--local_rank` under another dest (`dest='rank'`) is still what the launcher passes
        local = dest == "local_rank" or _local_rank_option(call)
        if not local and self.script_args is not None:
            passed = self._passed(call)
            if passed is not None:
                return Num(int(passed)) if passed.lstrip("-").isdecimal() else Text(passed)
            if _action(call) in ("store_true", "store_false"):
                return Num(int(_action(call) == "store_false"))
            return default if default is not None else Nothing()
        if local:
            rank = default if isinstance(default, Rank) else Rank("local")
            num = default.value if isinstance(default, Num) else None
            return replace(rank, arg_dest="local_rank", arg_default=num, origin=mod.where(call))
        return ArgValue(dest, default)

    def _guard(self, ifs: list[tuple[ast.If, bool]], frame: Frame) -> tuple[str, ...]:
        """Environment variables the ``if`` tests around an assignment require (() if unknown).

        ``"!X"`` requires X unset (the else branch of a test of one variable)."""
        need: list[str] = []
        for node, in_body in ifs:
            got = self._env_test(node.test, frame, 0)
            if in_body:
                if not got:
                    return ()
                need += got
            elif len(got) == 1:  # else of `if "X" in os.environ` (or `x is not None`): X unset
                need.append(negate(got[0]))
        return tuple(dict.fromkeys(need))

    def _env_test(self, test: ast.AST, frame: Frame, depth: int) -> list[str]:
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            out: list[str] = []
            for v in test.values:
                out += self._env_test(v, frame, depth)
            return out
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._env_test(test.operand, frame, depth)
            return [negate(inner[0])] if len(inner) == 1 else []
        if isinstance(test, ast.Call) and tail(test.func) == "all" and test.args:
            gen = test.args[0]
            if isinstance(gen, ast.GeneratorExp) and len(gen.generators) == 1:
                names = gen.generators[0].iter
                if isinstance(names, (ast.List, ast.Tuple)) and is_env_membership(gen.elt):
                    return [
                        e.value
                        for e in names.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    ]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, (ast.In, ast.NotIn)) and is_environ(right):
                left = test.left
                if isinstance(left, ast.Constant) and isinstance(left.value, str):
                    return [left.value if isinstance(op, ast.In) else negate(left.value)]
            if (
                isinstance(op, (ast.IsNot, ast.Is))
                and isinstance(right, ast.Constant)
                and right.value is None
            ):
                held = self._guard_of_name(test.left, frame, depth)
                if len(held) == 1:
                    return held if isinstance(op, ast.IsNot) else [negate(held[0])]
                return []
            probe: ast.expr = test.left
            while isinstance(probe, ast.Call) and tail(probe.func) == "int" and probe.args:
                probe = probe.args[0]
            read = env_read(probe)
            if read is not None:
                return [read[0]]
        env = env_read(test)
        if env is not None:
            return [env[0]]
        if isinstance(test, ast.Name) and depth < 2:
            found = frame.mod.names.get((id(frame.mod.tree), test.id)) or frame.mod.names.get(
                (id(frame.scope), test.id)
            )
            if found and len(found) == 1:
                return self._env_test(found[0].value, frame, depth + 1)
        return []

    def _guard_of_name(self, node: ast.AST, frame: Frame, depth: int) -> list[str]:
        """The variables under which a name gets its only non-None value (``x = None`` first);
        ``depth`` bounds the chase (``if x is not None: x = ...`` guards a name by itself)."""
        if not isinstance(node, ast.Name) or depth >= 2:
            return []
        found = frame.mod.names.get((id(frame.scope), node.id)) or []
        real = [
            b for b in found if not (isinstance(b.value, ast.Constant) and b.value.value is None)
        ]
        if len(real) != 1:
            return []
        ifs = [(i, body) for i, body in enclosing_ifs(frame.mod, real[0].stmt) if body]
        if len(ifs) != 1:
            return []
        return self._env_test(ifs[0][0].test, frame, depth + 1)

    def _caller_guard(self, scope: Scope) -> tuple[tuple[str, ...], bool]:
        """The environment guard every call of function ``scope`` shares (one level up), and
        whether its calls sit under conditions the analysis cannot decide."""
        name = getattr(scope, "name", None)
        if not name:
            return (), False
        guards = []
        undecided = False
        for mod, call in self._calls.get(name, [])[:8]:
            ifs = enclosing_ifs(mod, call)
            where = Frame.at(mod, call)
            g = self._guard(ifs, where)
            guards.append(g)
            undecided = undecided or (bool(ifs) and not g)
        if guards and all(guards) and len(set(guards)) == 1:
            return guards[0], False
        return (), undecided

    # --- implemented by Flow -------------------------------------------------------------
    def value(self, node: ast.AST | None, frame: Frame) -> Value:
        raise NotImplementedError

    def name(self, name: str, frame: Frame) -> Value:
        raise NotImplementedError

    def global_of(self, mod: Module, name: str, frame: Frame) -> Value:
        raise NotImplementedError

    def star_module(self, mod: Module, name: str, depth: int = 0) -> Module | None:
        raise NotImplementedError


def _action(call: ast.Call) -> str | None:
    for k in call.keywords:
        if (
            k.arg == "action"
            and isinstance(k.value, ast.Constant)
            and isinstance(k.value.value, str)
        ):
            return k.value.value
    return None


def _local_rank_option(call: ast.Call) -> bool:
    """Whether an ``add_argument`` call declares ``--local_rank`` / ``--local-rank`` (the option
    torch.distributed.launch and DeepSpeed pass; reference/launchers.md §2), whatever its dest."""
    return any(
        isinstance(a, ast.Constant) and a.value in ("--local_rank", "--local-rank")
        for a in call.args
    )
