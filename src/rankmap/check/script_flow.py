"""Data flow of device selection: what an expression of the script holds (a taint analysis).

:class:`Flow` evaluates an expression to a :mod:`~rankmap.check.script_values` value. Sources
(:mod:`~rankmap.check.script_models`): rank environment variables, ``--local_rank`` arguments,
``dist.get_rank()``/``hvd.local_rank()``, the ``mp.spawn`` index, framework rank attributes.
Propagation: assignments (the latest before the use; ``if``-guarded ones become choices when the
guard tests an environment variable), tuple unpacking, attributes (``args.gpu = ...`` anywhere in
the files read), dict keys, f-strings, ``%``/``format``/``+``, arithmetic, ``int()``, function
parameters (from every call site) and returns, imports of local modules. Everything else is an
:class:`~rankmap.check.script_values.Unknown` that says where it stopped.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from rankmap.check import script_models as models
from rankmap.check.script_program import Binding, Module, Program, Scope, enclosing_ifs
from rankmap.check.script_values import (
    ArgValue,
    Choice,
    DeviceCount,
    Dev,
    Framework,
    ModuleRef,
    Namespace,
    Num,
    Rank,
    Seq,
    Text,
    Unknown,
    Value,
    VisibleList,
    as_device,
    best,
    conditional,
    scaled,
    with_modulo,
)

MAX_DEPTH = 24


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
        if name.endswith(("environ.get", "getenv", "environ.setdefault")) and isinstance(
            key, ast.Constant
        ):
            if isinstance(key.value, str):
                return key.value, node.args[1] if len(node.args) > 1 else None, False
    return None


class Flow:
    """Evaluates expressions of a :class:`~rankmap.check.script_program.Program`."""

    def __init__(self, prog: Program) -> None:
        self.prog = prog
        self.unresolved: list[str] = []
        self._active: set[tuple[int, int]] = set()
        self._depth = 0
        self._calls: dict[str, list[tuple[Module, ast.Call]]] = {}
        self._args: dict[str, tuple[Module, ast.Call]] = {}
        for mod in prog.modules:
            for node in ast.walk(mod.tree):
                if isinstance(node, ast.Call):
                    self._calls.setdefault(tail(node.func), []).append((mod, node))
                    if tail(node.func) == "add_argument":
                        self._argparse(mod, node)

    # --- argparse ------------------------------------------------------------------------
    def _argparse(self, mod: Module, call: ast.Call) -> None:
        opts = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        dest = next((k.value for k in call.keywords if k.arg == "dest"), None)
        if isinstance(dest, ast.Constant) and isinstance(dest.value, str):
            self._args.setdefault(dest.value, (mod, call))
            return
        longs = [o for o in opts if o.startswith("--")] or opts
        for o in longs[:1]:
            self._args.setdefault(o.lstrip("-").replace("-", "_"), (mod, call))

    def declared_local_rank_args(self) -> tuple[str, ...]:
        found: list[str] = []
        for dest, (_, call) in self._args.items():
            if dest == "local_rank":
                found += [
                    a.value
                    for a in call.args
                    if isinstance(a, ast.Constant) and str(a.value).startswith("--")
                ]
        return tuple(found)

    def arg_value(self, dest: str, frame: Frame) -> Value | None:
        if dest not in self._args:
            return None
        mod, call = self._args[dest]
        dflt_node = next((k.value for k in call.keywords if k.arg == "default"), None)
        where = Frame(mod, mod.scope_of.get(id(_stmt(mod, call)), mod.tree), call)
        default = self.value(dflt_node, where) if dflt_node is not None else None
        if dest == "local_rank":
            rank = default if isinstance(default, Rank) else Rank("local")
            num = default.value if isinstance(default, Num) else None
            return replace(
                rank, arg_dest="local_rank", arg_default=num, origin=mod.where(call)
            )
        return ArgValue(dest, default)

    # --- expressions ---------------------------------------------------------------------
    def value(self, node: ast.AST | None, frame: Frame) -> Value:
        if node is None:
            return Unknown(f"{frame.where()}: no value")
        key = (id(node), hash(frame.bound))
        if key in self._active or self._depth > MAX_DEPTH:
            return Unknown(f"{frame.where(node)}: `{frame.mod.text(node)}` refers to itself")
        self._active.add(key)
        self._depth += 1
        try:
            return self._value(node, frame)
        finally:
            self._depth -= 1
            self._active.discard(key)

    def _value(self, node: ast.AST, frame: Frame) -> Value:
        sub = replace(frame, node=node) if getattr(node, "lineno", None) else frame
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool) or node.value is None:
                return Unknown(f"{sub.where()}: {node.value!r}")
            if isinstance(node.value, int):
                return Num(node.value)
            if isinstance(node.value, str):
                return Num(int(node.value)) if node.value.isdigit() else Text(node.value)
            return Unknown(f"{sub.where()}: constant {node.value!r}")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            inner = self.value(node.operand, sub)
            return Num(-inner.value) if isinstance(inner, Num) else inner
        if isinstance(node, ast.Name):
            return self.name(node.id, sub)
        if isinstance(node, ast.Attribute):
            return self.attribute(node, sub)
        if isinstance(node, ast.Call):
            return self.call(node, sub)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, sub)
        if isinstance(node, ast.JoinedStr):
            return self._fstring(node, sub)
        if isinstance(node, ast.BinOp):
            return self._binop(node, sub)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            return Seq(tuple(self.value(e, sub) for e in node.elts[:8]))
        if isinstance(node, ast.IfExp):
            return best([self.value(node.body, sub), self.value(node.orelse, sub)])
        if isinstance(node, ast.BoolOp):
            return best([self.value(v, sub) for v in node.values])
        if isinstance(node, ast.NamedExpr):
            return self.value(node.value, sub)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)) and len(node.generators) == 1:
            inner = self.value(node.generators[0].iter, sub)
            if isinstance(inner, VisibleList):
                return inner
        if isinstance(node, ast.Starred):
            return self.value(node.value, sub)
        return Unknown(f"{sub.where()}: `{sub.mod.text(node)}` not followed")

    def _fstring(self, node: ast.JoinedStr, frame: Frame) -> Value:
        parts = node.values
        head = parts[0] if parts else None
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            text = head.value
            if text.startswith("cuda:"):
                rest = text[5:]
                if rest.isdigit() and len(parts) == 1:
                    return Dev(Num(int(rest)))
                if not rest and len(parts) > 1 and isinstance(parts[1], ast.FormattedValue):
                    return Dev(self.value(parts[1].value, frame))
            if len(parts) == 1:
                return Text(text)
        if isinstance(head, ast.FormattedValue) and len(parts) == 1:
            return self.value(head.value, frame)
        return Unknown(f"{frame.where(node)}: f-string `{frame.mod.text(node)}`")

    def _binop(self, node: ast.BinOp, frame: Frame) -> Value:
        left = self.value(node.left, frame)
        if isinstance(node.op, ast.Mod) and isinstance(left, Text) and "cuda:" in left.value:
            return Dev(self.value(node.right, frame))
        right = self.value(node.right, frame)
        if isinstance(node.op, ast.Add) and isinstance(left, Text) and left.value == "cuda:":
            return Dev(right)
        if isinstance(left, Num) and isinstance(right, Num):
            try:
                return Num(_arith(node.op, left.value, right.value))
            except (ZeroDivisionError, TypeError):
                return Unknown(f"{frame.where(node)}: `{frame.mod.text(node)}`")
        if isinstance(node.op, ast.Mod):
            return with_modulo(left)
        if isinstance(node.op, ast.Mult) and isinstance(right, Num) and right.value == 1:
            return left
        if isinstance(node.op, ast.Add) and isinstance(right, Num) and right.value == 0:
            return left
        if isinstance(node.op, (ast.Add, ast.Sub, ast.Mult)) and _is_rank(left):
            return scaled(left)
        if isinstance(node.op, (ast.Add, ast.Mult)) and _is_rank(right):
            return scaled(right)
        return Unknown(f"{frame.where(node)}: `{frame.mod.text(node)}` not followed")

    # --- names ---------------------------------------------------------------------------
    def name(self, name: str, frame: Frame) -> Value:
        for bound_name, v in frame.bound:
            if bound_name == name:
                return v
        mod, scope = frame.mod, frame.scope
        while True:
            found = mod.names.get((id(scope), name))
            if found:
                return self._reaching(found, frame, scope)
            if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if name in _params(scope):
                    return self.parameter(scope, name, frame)
                scope = mod.scope_of.get(id(scope), mod.tree) if not isinstance(
                    scope, ast.Lambda
                ) else mod.tree
                continue
            break
        if name in mod.imports:
            return self._imported(mod, name, frame)
        if name in mod.functions:
            return Unknown(f"{frame.where()}: function `{name}` used as a value")
        starred = self._star_module(mod, name)
        if starred is not None:
            return self.global_of(starred, name, frame)
        return Unknown(f"{frame.where()}: `{name}` is not assigned in the files read")

    def _star_module(self, mod: Module, name: str, depth: int = 0) -> Module | None:
        """The module a ``from x import *`` of ``mod`` takes ``name`` from, if any."""
        for target in mod.stars:
            linked = mod.links.get(target)
            if linked is None:
                continue
            if (id(linked.tree), name) in linked.names or name in linked.functions or (
                name in linked.imports
            ):
                return linked
            if depth < 2:
                deeper = self._star_module(linked, name, depth + 1)
                if deeper is not None:
                    return deeper
        return None

    def _reaching(self, found: list[Binding], frame: Frame, scope: Scope) -> Value:
        same_scope = scope is frame.scope
        before = [b for b in found if not same_scope or b.stmt.lineno <= frame.line] or found
        before.sort(key=lambda b: b.stmt.lineno)
        use_ifs = {(id(i), body) for i, body in enclosing_ifs(frame.mod, frame.node)}
        guarded: list[tuple[tuple[str, ...], Value]] = []
        loose: list[Value] = []
        for b in reversed(before):
            ifs = [(i, body) for i, body in enclosing_ifs(frame.mod, b.stmt)]
            own = [(i, body) for i, body in ifs if (id(i), body) not in use_ifs]
            v = self._binding(b, frame.mod, scope)
            if not own:
                loose.append(v)
                break
            guard = self._guard(own, frame)
            if guard:
                guarded.append((guard, v))
            else:
                loose.append(conditional(v))
        fallback = best(loose) if loose else Unknown(f"{frame.where()}: no unconditional value")
        if not guarded:
            return fallback
        return Choice((*guarded, ((), fallback)))

    def _binding(self, b: Binding, mod: Module, scope: Scope) -> Value:
        frame = Frame(mod, scope, b.stmt)
        if isinstance(b.stmt, ast.For):
            return Unknown(f"{mod.where(b.stmt)}: loop variable")
        if b.index is not None and isinstance(b.value, (ast.Tuple, ast.List)):
            elts = b.value.elts
            if 0 <= b.index < len(elts):
                return self.value(elts[b.index], frame)
        v = self.value(b.value, frame)
        if b.index is not None:
            if isinstance(v, Seq) and 0 <= b.index < len(v.items):
                return v.items[b.index]
            if isinstance(v, Namespace) and b.index == 0:
                return v
            return Unknown(f"{mod.where(b.stmt)}: item {b.index} of `{mod.text(b.value)}`")
        return v

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
                need.append(_negate(got[0]))
        return tuple(dict.fromkeys(need))

    def _env_test(self, test: ast.AST, frame: Frame, depth: int) -> list[str]:
        if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            out: list[str] = []
            for v in test.values:
                out += self._env_test(v, frame, depth)
            return out
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = self._env_test(test.operand, frame, depth)
            return [_negate(inner[0])] if len(inner) == 1 else []
        if isinstance(test, ast.Call) and tail(test.func) == "all" and test.args:
            gen = test.args[0]
            if isinstance(gen, ast.GeneratorExp) and len(gen.generators) == 1:
                names = gen.generators[0].iter
                if isinstance(names, (ast.List, ast.Tuple)) and _is_env_membership(gen.elt):
                    return [e.value for e in names.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            op, right = test.ops[0], test.comparators[0]
            if isinstance(op, (ast.In, ast.NotIn)) and _is_environ(right):
                left = test.left
                if isinstance(left, ast.Constant) and isinstance(left.value, str):
                    return [left.value if isinstance(op, ast.In) else _negate(left.value)]
            if isinstance(op, (ast.IsNot, ast.Is)) and isinstance(right, ast.Constant) and right.value is None:
                held = self._guard_of_name(test.left, frame)
                if len(held) == 1:
                    return held if isinstance(op, ast.IsNot) else [_negate(held[0])]
                return []
            inner = test.left
            while isinstance(inner, ast.Call) and tail(inner.func) == "int" and inner.args:
                inner = inner.args[0]
            env = env_read(inner)
            if env is not None:
                return [env[0]]
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

    def _guard_of_name(self, node: ast.AST, frame: Frame) -> list[str]:
        """The variables under which a name gets its only non-None value (``x = None`` first)."""
        if not isinstance(node, ast.Name):
            return []
        found = frame.mod.names.get((id(frame.scope), node.id)) or []
        real = [b for b in found if not (isinstance(b.value, ast.Constant) and b.value.value is None)]
        if len(real) != 1:
            return []
        ifs = [(i, body) for i, body in enclosing_ifs(frame.mod, real[0].stmt) if body]
        if len(ifs) != 1:
            return []
        return self._env_test(ifs[0][0].test, frame, 1)

    def _imported(self, mod: Module, name: str, frame: Frame) -> Value:
        target, attr = mod.imports[name]
        linked = mod.links.get(target)
        if attr is None:
            return ModuleRef(target, linked.path if linked else None)
        sub = mod.links.get(mod.imports.get(f"\0{name}", ("", None))[0])
        if sub is not None:
            return ModuleRef(sub.name, sub.path)
        if linked is None:
            return ModuleRef(f"{target}.{attr}")
        return self.global_of(linked, attr, frame)

    def global_of(self, mod: Module, name: str, frame: Frame) -> Value:
        found = mod.names.get((id(mod.tree), name))
        if found:
            return self._reaching(found, Frame(mod, mod.tree, found[-1].stmt), mod.tree)
        if name in mod.imports:
            return self._imported(mod, name, frame)
        starred = self._star_module(mod, name)
        if starred is not None and starred is not mod:
            return self.global_of(starred, name, frame)
        return Unknown(f"{frame.where()}: `{name}` not found in {mod.path}")

    # --- parameters ----------------------------------------------------------------------
    def parameter(self, func: ast.AST, name: str, frame: Frame) -> Value:
        assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        params = _params(func)
        pos = params.index(name)
        is_method = bool(params) and params[0] in ("self", "cls")
        if is_method and pos == 0:
            return Unknown(f"{frame.where()}: `{name}`")
        values: list[Value] = []
        fname = getattr(func, "name", "")
        call_names = [fname]
        if fname == "__init__":
            cls = frame.mod.scope_of.get(id(func))
            call_names = [n.name for n in ast.walk(frame.mod.tree) if isinstance(n, ast.ClassDef) and func in n.body]
            del cls
        for cname in call_names:
            for mod, call in self._calls.get(cname, [])[:16]:
                v = self._arg_at(call, pos - (1 if is_method else 0), name, mod)
                if v is not None:
                    values.append(v)
        for mod, call in self._spawns(fname):
            values.append(self._spawn_arg(call, pos, mod))
        if values:
            return best(values)
        default = _default(func, name)
        if default is not None:
            return self.value(default, Frame(frame.mod, frame.mod.scope_of.get(id(func), frame.mod.tree), default))
        return Unknown(f"{frame.mod.where(func)}: parameter `{name}` of {fname or 'lambda'}() — no call found")

    def _arg_at(self, call: ast.Call, pos: int, name: str, mod: Module) -> Value | None:
        frame = Frame(mod, mod.scope_of.get(id(_stmt(mod, call)), mod.tree), call)
        for kw in call.keywords:
            if kw.arg == name:
                return self.value(kw.value, frame)
        if 0 <= pos < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: pos + 1]):
            return self.value(call.args[pos], frame)
        return None

    def _spawns(self, fname: str) -> list[tuple[Module, ast.Call]]:
        out = []
        for spawner in ("spawn", "start_processes", "Process"):
            for mod, call in self._calls.get(spawner, []):
                target = call.args[0] if call.args else next(
                    (k.value for k in call.keywords if k.arg in ("fn", "target")), None
                )
                if target is not None and tail(target) == fname and fname:
                    out.append((mod, call))
        return out

    def _spawn_arg(self, call: ast.Call, pos: int, mod: Module) -> Value:
        where = mod.where(call)
        if tail(call.func) != "Process" and pos == 0:
            return Rank("local", by_process=True, origin=f"{where}: mp.spawn index")
        args = next((k.value for k in call.keywords if k.arg == "args"), None)
        if args is None and len(call.args) > 1 and tail(call.func) != "Process":
            args = call.args[1]
        shift = 0 if tail(call.func) == "Process" else 1
        if isinstance(args, (ast.Tuple, ast.List)) and 0 <= pos - shift < len(args.elts):
            frame = Frame(mod, mod.scope_of.get(id(_stmt(mod, call)), mod.tree), call)
            return self.value(args.elts[pos - shift], frame)
        return Unknown(f"{where}: argument {pos} of the spawned function")

    # --- attributes, keys ----------------------------------------------------------------
    def attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        base = self.value(node.value, frame) if isinstance(node.value, (ast.Name, ast.Call)) else None
        if isinstance(base, ModuleRef):
            linked = next((m for m in self.prog.modules if m.path == base.path), None)
            if linked is not None:
                return self.global_of(linked, node.attr, frame)
            return Unknown(f"{frame.where()}: `{base.name}.{node.attr}` (external)")
        if isinstance(base, Framework) or (base is None and node.attr in models.RANK_ATTRS):
            v = self._framework_attr(node.attr, base, frame)
            if v is not None:
                return v
        options = self._attr_bindings(node, frame)
        if isinstance(base, Namespace) or node.attr in self._args:
            arg = self.arg_value(node.attr, frame)
            if arg is not None:
                options.append(((), arg))
        if not options:
            if node.attr in models.RANK_ATTRS and isinstance(base, Framework):
                return Rank(models.RANK_ATTRS[node.attr], by_process=True, origin=frame.where())
            return Unknown(f"{frame.where()}: `{frame.mod.text(node)}` is never assigned in the files read")
        return _combine(options)

    def _framework_attr(self, attr: str, base: Value | None, frame: Frame) -> Value | None:
        if not isinstance(base, Framework):
            return None
        model = next((m for m in models.FRAMEWORKS if m.name == base.name), None)
        if attr == "device" and model is not None:
            return Dev(model_rank(model, frame.where()))
        if attr in models.RANK_ATTRS:
            return Rank(models.RANK_ATTRS[attr], by_process=True, origin=frame.where())
        return None

    def _attr_bindings(self, node: ast.Attribute, frame: Frame) -> list[tuple[tuple[str, ...], Value]]:
        found = self.prog.attrs.get(node.attr, [])
        base_text = dotted(node.value)
        same = [(m, b) for m, b in found if _target_base(b) == base_text]
        out: list[tuple[tuple[str, ...], Value]] = []
        for mod, b in (same or found)[:12]:
            scope = mod.scope_of.get(id(b.stmt), mod.tree)
            v = self._binding(b, mod, scope)
            ifs = enclosing_ifs(mod, b.stmt)
            guard = self._guard(ifs, Frame(mod, scope, b.stmt))
            if not guard:
                guard, undecided = self._caller_guard(scope)
                if ifs or undecided:
                    v = conditional(v)
            out.append((guard, v))
        return out

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
            where = Frame(mod, mod.scope_of.get(id(_stmt(mod, call)), mod.tree), call)
            g = self._guard(ifs, where)
            guards.append(g)
            undecided = undecided or (bool(ifs) and not g)
        if guards and all(guards) and len(set(guards)) == 1:
            return guards[0], False
        return (), undecided

    def subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        env = env_read(node)
        if env is not None:
            return self.env_value(env[0], None, True, frame)
        key = node.slice
        base = self.value(node.value, frame)
        if isinstance(key, ast.Constant) and isinstance(key.value, int) and isinstance(base, Seq):
            if -len(base.items) <= key.value < len(base.items):
                return base.items[key.value]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found = self.prog.keys.get(key.value, [])
            opts = [((), self._binding(b, m, m.scope_of.get(id(b.stmt), m.tree))) for m, b in found[:8]]
            lit = self._dict_literal(node.value, key.value, frame)
            if lit is not None:
                opts.append(((), lit))
            if opts:
                return _combine(opts)
        return _index_into(base, self.value(key, frame), frame.where(), frame.mod.text(node))

    def _dict_literal(self, node: ast.expr, key: str, frame: Frame) -> Value | None:
        if not isinstance(node, ast.Name):
            return None
        found = frame.mod.names.get((id(frame.scope), node.id)) or frame.mod.names.get(
            (id(frame.mod.tree), node.id)
        )
        for b in found or []:
            comp = b.value
            if isinstance(comp, ast.DictComp) and len(comp.generators) == 1:
                gen = comp.generators[0]
                keys = gen.iter.elts if isinstance(gen.iter, (ast.Tuple, ast.List)) else []
                env = env_read(comp.value)
                loop = gen.target.id if isinstance(gen.target, ast.Name) else None
                if env is None and isinstance(comp.value, ast.Subscript) and dotted(comp.value.value).endswith("environ"):
                    env = ("", None, True) if _is_name(comp.value.slice, loop) else None
                if env is not None and any(isinstance(k, ast.Constant) and k.value == key for k in keys):
                    return self.env_value(key, None, env[2], Frame(frame.mod, frame.scope, b.stmt))
            if isinstance(b.value, ast.Dict):
                for k, v in zip(b.value.keys, b.value.values):
                    if isinstance(k, ast.Constant) and k.value == key:
                        return self.value(v, Frame(frame.mod, frame.scope, b.stmt))
        return None

    # --- calls ---------------------------------------------------------------------------
    def env_value(self, var: str, default: ast.expr | None, required: bool, frame: Frame) -> Value:
        where = frame.where()
        dflt = self.value(default, frame) if default is not None else None
        scope = (
            "local" if var in models.LOCAL_RANK_VARS else "global" if var in models.GLOBAL_RANK_VARS else ""
        )
        if not scope:
            return Unknown(f"{where}: reads ${var}, which no launcher model sets")
        if isinstance(dflt, Rank) and dflt.scope == scope:
            return replace(dflt, env_vars=(var, *dflt.env_vars), origin=f"{where}: {var}")
        num = dflt.value if isinstance(dflt, Num) else None
        return Rank(scope, (var,), num, required and default is None, origin=f"{where}: {var}")

    def call(self, node: ast.Call, frame: Frame) -> Value:
        env = env_read(node)
        if env is not None:
            return self.env_value(env[0], env[1], env[2], frame)
        name = dotted(node.func)
        t = tail(node.func)
        arg0 = node.args[0] if node.args else None
        if t in ("int", "str", "float", "round", "abs", "list", "tuple", "sorted") and arg0 is not None:
            return self.value(arg0, frame)
        if t == "range" and arg0 is not None:
            return Seq((self.value(arg0, frame),))
        if t == "device" and name.endswith(("torch.device", "device")) and name != "device":
            return self._torch_device(node, frame)
        if t == "device" and name == "device" and "device" in frame.mod.imports:
            return self._torch_device(node, frame)
        if t == "format" and isinstance(node.func, ast.Attribute):
            fmt = node.func.value
            if isinstance(fmt, ast.Constant) and str(fmt.value).startswith("cuda:") and arg0 is not None:
                return Dev(self.value(arg0, frame))
        if t == "split" and isinstance(node.func, ast.Attribute):
            env = env_read(node.func.value)
            if env is not None and env[0] == models.CVD:
                return VisibleList()
        if t == "get_default_backend_for_device":
            return Text("default")
        if t == "device_count":
            return DeviceCount()
        if t == "current_device":
            return Dev(None)
        if t in ("parse_args", "parse_known_args"):
            return Namespace() if t == "parse_args" else Seq((Namespace(), Unknown("extra args")))
        local = self._local_function(node, frame)
        if local is not None:
            return local
        model = models.framework_for(t, self.prog.top_modules)
        if model is not None:
            return Framework(model.name)
        if t in models.RANK_CALLS and not node.args:
            scope, by_process = models.RANK_CALLS[t]
            if by_process:
                return Rank(scope, by_process=True, origin=f"{frame.where()}: {name}()")
            return Rank(scope, ("LOCAL_RANK",), 0, origin=f"{frame.where()}: {name}()")
        return Unknown(f"{frame.where()}: `{name}()` not followed")

    def _torch_device(self, node: ast.Call, frame: Frame) -> Value:
        args = list(node.args)
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if len(args) >= 2 or "index" in kw:
            kind = self.value(args[0] if args else kw.get("type"), frame)
            index = self.value(args[1] if len(args) >= 2 else kw["index"], frame)
            if isinstance(kind, Text) and kind.value != "cuda":
                return kind
            return Dev(index)
        if args:
            return as_device(self.value(args[0], frame))
        return Unknown(f"{frame.where()}: torch.device() without arguments")

    def _local_function(self, node: ast.Call, frame: Frame) -> Value | None:
        funcs = self.resolve_function(node.func, frame)
        if not funcs:
            return None
        values = []
        for mod, func in funcs[:4]:
            bound = tuple(self._bind_args(func, node, frame))
            returns = [
                r.value
                for r in ast.walk(func)
                if isinstance(r, ast.Return) and r.value is not None and mod.scope_of.get(id(r)) is func
            ]
            for r in returns[:6]:
                values.append(self.value(r, Frame(mod, func, r, bound)))
        return best(values) if values else Unknown(f"{frame.where()}: `{dotted(node.func)}()` returns nothing")

    def _bind_args(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, frame: Frame
    ) -> list[tuple[str, Value]]:
        params = _params(func)
        if params and params[0] in ("self", "cls"):
            params = params[1:]
        out = []
        for p, a in zip(params, call.args):
            if isinstance(a, ast.Starred):
                break
            out.append((p, self.value(a, frame)))
        for kw in call.keywords:
            if kw.arg in params:
                out.append((kw.arg, self.value(kw.value, frame)))
        return out

    def resolve_function(
        self, func: ast.AST, frame: Frame
    ) -> list[tuple[Module, ast.FunctionDef | ast.AsyncFunctionDef]]:
        """Local definitions a call target refers to (same module, imports, ``self.method``)."""
        mod = frame.mod
        if isinstance(func, ast.Name):
            if func.id in mod.functions:
                return [(mod, f) for f in mod.functions[func.id]]
            if func.id in mod.imports:
                target, attr = mod.imports[func.id]
                linked = mod.links.get(target)
                if linked is not None and attr and attr in linked.functions:
                    return [(linked, f) for f in linked.functions[attr]]
                if linked is not None and attr and attr in linked.imports:
                    return self.resolve_function(ast.Name(attr), Frame(linked, linked.tree, func))
                return []
            starred = self._star_module(mod, func.id)
            if starred is not None:
                return self.resolve_function(func, Frame(starred, starred.tree, func))
            return []
        if isinstance(func, ast.Attribute):
            if isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
                return [(mod, f) for f in mod.functions.get(func.attr, [])]
            if isinstance(func.value, ast.Name) and func.value.id in mod.imports:
                base = self.name(func.value.id, frame)
                if isinstance(base, ModuleRef) and base.path:
                    linked = next(m for m in self.prog.modules if m.path == base.path)
                    return [(linked, f) for f in linked.functions.get(func.attr, [])]
        return []


def _index_into(base: Value, idx: Value, where: str, text: str) -> Value:
    """``base[idx]``: a CUDA_VISIBLE_DEVICES entry, a rank-indexed list, or unknown."""
    if isinstance(base, Choice):
        return Choice(tuple((g, _index_into(o, idx, where, text)) for g, o in base.options))
    if isinstance(base, VisibleList) and isinstance(idx, Choice):
        return Choice(tuple((g, _index_into(base, o, where, text)) for g, o in idx.options))
    if isinstance(base, VisibleList) and isinstance(idx, Rank):
        return replace(idx, via_cvd=True)
    if isinstance(idx, (Rank, Choice)) and _is_rank(idx):
        return scaled(idx)
    return Unknown(f"{where}: `{text}` not followed")


def _is_name(node: ast.AST, name: str | None) -> bool:
    return name is not None and isinstance(node, ast.Name) and node.id == name


def _negate(var: str) -> str:
    return var[1:] if var.startswith("!") else f"!{var}"


def _is_environ(node: ast.AST) -> bool:
    name = dotted(node)
    return name.endswith("environ") or name.endswith("environ.keys()")


def _is_env_membership(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In)
        and _is_environ(node.comparators[0])
    )


def _arith(op: ast.operator, a: int, b: int) -> int:
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


def _is_rank(v: Value) -> bool:
    if isinstance(v, Rank):
        return True
    if isinstance(v, Choice):
        return any(_is_rank(o) for _, o in v.options)
    return False


def _combine(options: list[tuple[tuple[str, ...], Value]]) -> Value:
    guarded = [(g, v) for g, v in options if g]
    loose = [v for g, v in options if not g]
    fallback = best(loose) if loose else None
    if not guarded:
        return fallback if fallback is not None else Unknown("no value")
    if fallback is None:
        return Choice(tuple(guarded))
    return Choice((*guarded, ((), fallback)))


def _params(func: ast.AST) -> list[str]:
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return []
    return [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]


def _default(func: ast.AST, name: str) -> ast.expr | None:
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return None
    pos = [*args.posonlyargs, *args.args]
    for a, d in zip(pos[len(pos) - len(args.defaults) :], args.defaults):
        if a.arg == name:
            return d
    for a, d in zip(args.kwonlyargs, args.kw_defaults):
        if a.arg == name:
            return d
    return None


def _stmt(mod: Module, node: ast.AST) -> ast.AST:
    cur: ast.AST | None = node
    while cur is not None and not isinstance(cur, ast.stmt):
        cur = mod.parent.get(id(cur))
    return cur if cur is not None else node


def _target_base(b: Binding) -> str:
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
