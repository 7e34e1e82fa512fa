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
from dataclasses import replace

from rankmap.check import script_models as models
from rankmap.check.script_ast import (
    Frame,
    arith,
    combine,
    dotted,
    env_read,
    index_into,
    is_name,
    is_rank,
    model_rank,
    param_names,
    tail,
    target_base,
)
from rankmap.check.script_calls import Calls
from rankmap.check.script_program import (
    Binding,
    Module,
    Scope,
    enclosing_ifs,
    except_handler,
    statement_of,
)
from rankmap.check.script_values import (
    Choice,
    Dev,
    Framework,
    ModuleRef,
    Namespace,
    Nothing,
    Num,
    Rank,
    Seq,
    Text,
    Unknown,
    Value,
    VisibleList,
    best,
    conditional,
    first_set,
    linear,
    open_world,
    with_literal_modulus,
    with_modulo,
)

_LINEAR = (ast.Add, ast.Sub, ast.Mult)


def _linear_terms(op: ast.operator, number: int) -> tuple[int, int]:
    """(factor, offset) of ``rank <op> number``."""
    if isinstance(op, ast.Mult):
        return number, 0
    return 1, number if isinstance(op, ast.Add) else -number


MAX_DEPTH = 24
# Values one question may visit: every parameter fans out to its call sites and every name to its
# bindings, so a chain of 24 steps can branch into millions of paths in a big package (a
# Lightning-based trainer took minutes). Past this every further value is unknown: the answer is
# the most telling value reached before the budget ran out (script_values.best), or unknown.
MAX_STEPS = 4000

__all__ = ["Flow", "Frame", "dotted", "model_rank", "tail"]


class Flow(Calls):
    """Evaluates expressions of a :class:`~rankmap.check.script_program.Program`."""

    # --- expressions ---------------------------------------------------------------------
    def value(self, node: ast.AST | None, frame: Frame) -> Value:
        if node is None:
            return Unknown(f"{frame.where()}: no value")
        key = (id(node), hash(frame.bound))
        if key in self._active or self._depth > MAX_DEPTH:
            return Unknown(f"{frame.where(node)}: `{frame.mod.text(node)}` refers to itself", True)
        if self._depth == 0:
            self._steps = 0  # each question the analysis asks has its own budget
        self._steps += 1
        if self._steps > MAX_STEPS:  # reached through too many paths (call sites x bindings)
            return Unknown(
                f"{frame.where(node)}: `{frame.mod.text(node)}` is reached through more than "
                f"{MAX_STEPS} paths; not followed further"
            )
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
            if node.value is None:
                return Nothing()
            if isinstance(node.value, bool):
                return Num(int(node.value))
            if isinstance(node.value, int):
                return Num(node.value)
            if isinstance(node.value, str):
                return Num(int(node.value)) if node.value.isdecimal() else Text(node.value)
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
            values = [self.value(v, sub) for v in node.values]
            chained = first_set(values) if isinstance(node.op, ast.Or) else None
            return chained or best(values)
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
                if rest.isdecimal() and len(parts) == 1:
                    return Dev(Num(int(rest)))
                if not rest and len(parts) > 1 and isinstance(parts[1], ast.FormattedValue):
                    return Dev(self.value(parts[1].value, frame))
            if len(parts) == 1:
                return Text(text)
        if isinstance(head, ast.FormattedValue) and len(parts) == 1:
            return self.value(head.value, frame)
        return Unknown(f"{frame.where(node)}: f-string `{frame.mod.text(node)}`")

    def _binop(self, node: ast.BinOp, frame: Frame) -> Value:
        remainder = _remainder_spelled_out(node)
        if remainder is not None:  # ``rank - g * (rank // g)`` is ``rank % g`` (review 37)
            return self._binop(remainder, frame)
        left = self.value(node.left, frame)
        if isinstance(node.op, ast.Mod) and isinstance(left, Text) and "cuda:" in left.value:
            return Dev(self.value(node.right, frame))
        right = self.value(node.right, frame)
        if isinstance(node.op, ast.Add) and isinstance(left, Text) and left.value == "cuda:":
            return Dev(right)
        if isinstance(left, Num) and isinstance(right, Num):
            try:
                return Num(arith(node.op, left.value, right.value))
            except (ZeroDivisionError, TypeError):
                return Unknown(f"{frame.where(node)}: `{frame.mod.text(node)}`")
        if isinstance(node.op, ast.Mod) and isinstance(right, Num) and right.value > 0:
            return with_literal_modulus(left, right.value)  # ``local_rank % 2`` (review 20)
        if isinstance(node.op, ast.Mod):
            return with_modulo(left)
        if isinstance(node.op, ast.Mult) and isinstance(right, Num) and right.value == 1:
            return left
        if isinstance(node.op, ast.Add) and isinstance(right, Num) and right.value == 0:
            return left
        if is_rank(left) and isinstance(right, Num) and isinstance(node.op, _LINEAR):
            return linear(left, *_linear_terms(node.op, right.value))
        if is_rank(right) and isinstance(left, Num) and isinstance(node.op, (ast.Add, ast.Mult)):
            return linear(right, *_linear_terms(node.op, left.value))
        # a rank combined with a value not followed (`node * 8 + LOCAL_RANK`, `RANK - node * 8`)
        # is not that rank: `RANK - GROUP_RANK * 8` is the local rank, `GROUP_RANK * 8 +
        # LOCAL_RANK` the global one (review 48: a false RM401 and a miss when the unknown term
        # was taken as 0) — unknown, said where
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
                if name in param_names(scope):
                    return self.parameter(scope, name, frame)
                scope = (
                    mod.scope_of.get(id(scope), mod.tree)
                    if not isinstance(scope, ast.Lambda)
                    else mod.tree
                )
                continue
            break
        if name in mod.imports:
            return self._imported(mod, name, frame)
        if name in mod.functions:
            return Unknown(f"{frame.where()}: function `{name}` used as a value")
        starred = self.star_module(mod, name)
        if starred is not None:
            return self.global_of(starred, name, frame)
        return Unknown(f"{frame.where()}: `{name}` is not assigned in the files read")

    def star_module(self, mod: Module, name: str, depth: int = 0) -> Module | None:
        """The module a ``from x import *`` of ``mod`` takes ``name`` from, if any."""
        for target in mod.stars:
            linked = mod.links.get(target)
            if linked is None:
                continue
            if (
                (id(linked.tree), name) in linked.names
                or name in linked.functions
                or (name in linked.imports)
            ):
                return linked
            if depth < 2:
                deeper = self.star_module(linked, name, depth + 1)
                if deeper is not None:
                    return deeper
        return None

    def _reaching(self, found: list[Binding], frame: Frame, scope: Scope) -> Value:
        same_scope = scope is frame.scope
        use_stmt = statement_of(frame.mod, frame.node) if same_scope else None  # `x = f(x)`:
        found = [b for b in found if b.stmt is not use_stmt] or found  # the x before it
        before = [b for b in found if not same_scope or b.stmt.lineno <= frame.line] or found
        before.sort(key=lambda b: b.stmt.lineno)
        use_ifs = {(id(i), body) for i, body in enclosing_ifs(frame.mod, frame.node)}
        use_handler = except_handler(frame.mod, frame.node)
        guarded: list[tuple[tuple[str, ...], Value]] = []
        loose: list[Value] = []
        for b in reversed(before):
            if self.dead(frame.mod, b.stmt):
                continue
            ifs = [(i, body) for i, body in enclosing_ifs(frame.mod, b.stmt)]
            own = [(i, body) for i, body in ifs if (id(i), body) not in use_ifs]
            v = self._binding(b, frame.mod, scope)
            handler = except_handler(frame.mod, b.stmt)
            if not own and handler is not None and handler is not use_handler:
                loose.append(conditional(v))  # the fallback of a try: the try body runs first
                continue
            if not own:
                loose.append(v)
                break
            guard = self._guard(own, frame)
            if guard:
                guarded.append((guard, v))
            else:
                loose.append(conditional(v))
        fallback = (
            open_world(loose) if loose else Unknown(f"{frame.where()}: no unconditional value")
        )
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
        starred = self.star_module(mod, name)
        if starred is not None and starred is not mod:
            return self.global_of(starred, name, frame)
        return Unknown(f"{frame.where()}: `{name}` not found in {mod.path}")

    # --- attributes, keys ----------------------------------------------------------------
    def attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        base = (
            self.value(node.value, frame) if isinstance(node.value, (ast.Name, ast.Call)) else None
        )
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
            return Unknown(
                f"{frame.where()}: no assignment to `{frame.mod.text(node)}` found in the files "
                "read (a property, a class-level field or a library's attribute is not followed)"
            )
        return combine(options)

    def _framework_attr(self, attr: str, base: Value | None, frame: Frame) -> Value | None:
        if not isinstance(base, Framework):
            return None
        model = next((m for m in models.FRAMEWORKS if m.name == base.name), None)
        if attr == "device" and model is not None:
            return Dev(model_rank(model, frame.where()))
        if attr in models.RANK_ATTRS:
            return Rank(models.RANK_ATTRS[attr], by_process=True, origin=frame.where())
        return None

    def _attr_bindings(
        self, node: ast.Attribute, frame: Frame
    ) -> list[tuple[tuple[str, ...], Value]]:
        found = self.prog.attrs.get(node.attr, [])
        base_text = dotted(node.value)
        same = [(m, b) for m, b in found if target_base(b) == base_text]
        out: list[tuple[tuple[str, ...], Value]] = []
        for mod, b in (same or found)[:12]:
            if self.dead(mod, b.stmt):
                continue
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

    def subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        env = env_read(node)
        if env is not None:
            return self.env_value(env[0], None, True, frame)
        key = node.slice
        base = self.value(node.value, frame)
        if (
            isinstance(key, ast.Constant)
            and isinstance(key.value, int)
            and isinstance(base, Seq)
            and -len(base.items) <= key.value < len(base.items)
        ):
            return base.items[key.value]
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            found = self.prog.keys.get(key.value, [])
            opts: list[tuple[tuple[str, ...], Value]] = [
                ((), self._binding(b, m, m.scope_of.get(id(b.stmt), m.tree))) for m, b in found[:8]
            ]
            lit = self._dict_literal(node.value, key.value, frame)
            if lit is not None:
                opts.append(((), lit))
            if opts:
                return combine(opts)
        return index_into(base, self.value(key, frame), frame.where(), frame.mod.text(node))

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
                if (
                    env is None
                    and isinstance(comp.value, ast.Subscript)
                    and dotted(comp.value.value).endswith("environ")
                ):
                    env = ("", None, True) if is_name(comp.value.slice, loop) else None
                if env is not None and any(
                    isinstance(k, ast.Constant) and k.value == key for k in keys
                ):
                    return self.env_value(key, None, env[2], Frame(frame.mod, frame.scope, b.stmt))
            if isinstance(b.value, ast.Dict):
                for k, v in zip(b.value.keys, b.value.values, strict=False):
                    if isinstance(k, ast.Constant) and k.value == key:
                        return self.value(v, Frame(frame.mod, frame.scope, b.stmt))
        return None


def _remainder_spelled_out(node: ast.BinOp) -> ast.BinOp | None:
    """``a - b * (a // b)`` / ``a - (a // b) * b`` as the ``a % b`` it computes."""
    right = node.right
    if not (isinstance(node.op, ast.Sub) and isinstance(right, ast.BinOp)):
        return None
    if not isinstance(right.op, ast.Mult):
        return None
    for quotient, divisor in ((right.right, right.left), (right.left, right.right)):
        if (
            isinstance(quotient, ast.BinOp)
            and isinstance(quotient.op, ast.FloorDiv)
            and ast.dump(quotient.left) == ast.dump(node.left)
            and ast.dump(quotient.right) == ast.dump(divisor)
        ):
            return ast.copy_location(ast.BinOp(node.left, ast.Mod(), divisor), node)
    return None
