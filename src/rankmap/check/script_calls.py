"""Calls and parameters in the script data flow: environment reads, ``torch.device``, local
functions (their returns, with arguments bound), call sites of a parameter (``mp.spawn`` index
included), and framework constructors."""

from __future__ import annotations

import ast
from dataclasses import replace

from rankmap.check import script_models as models
from rankmap.check.script_ast import (
    Frame,
    default_of,
    dotted,
    env_read,
    guarded_env_return,
    param_names,
    tail,
)
from rankmap.check.script_guards import Guards
from rankmap.check.script_program import Module
from rankmap.check.script_values import (
    Dev,
    DeviceCount,
    Framework,
    LocalCount,
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
    first_set,
    open_world,
    rank_of_any_launcher,
)
from rankmap.launch_vars import RANK_VARS


class Calls(Guards):
    """Calls, parameters and function returns."""

    # --- parameters ----------------------------------------------------------------------
    def parameter(self, func: ast.AST, name: str, frame: Frame) -> Value:
        assert isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        params = param_names(func)
        pos = params.index(name)
        is_method = bool(params) and params[0] in ("self", "cls")
        if is_method and pos == 0:
            return Unknown(f"{frame.where()}: `{name}`")
        values: list[Value] = []
        fname = getattr(func, "name", "")
        call_names = [fname]
        if fname == "__init__":
            cls = frame.mod.scope_of.get(id(func))
            call_names = [
                n.name
                for n in ast.walk(frame.mod.tree)
                if isinstance(n, ast.ClassDef) and func in n.body
            ]
            del cls
        unreached: list[Value] = []  # from call sites inside functions nothing refers to
        for cname in call_names:
            for mod, call in self._calls.get(cname, [])[:16]:
                if self.dead(mod, call):
                    continue
                v = self._arg_at(call, pos - (1 if is_method else 0), name, mod)
                if v is not None:
                    (unreached if self._never_referenced(mod, call) else values).append(v)
        values = values or unreached
        for mod, call in self._spawns(fname):
            if self.dead(mod, call):
                continue
            values.append(self._spawn_arg(call, pos, mod))
        if values:
            return rank_of_any_launcher(values) or best(values)
        default = default_of(func, name)
        if default is not None:
            return self.value(
                default, Frame(frame.mod, frame.mod.scope_of.get(id(func), frame.mod.tree), default)
            )
        return Unknown(
            f"{frame.mod.where(func)}: parameter `{name}` of {fname or 'lambda'}() — no call found"
        )

    def _never_referenced(self, mod: Module, call: ast.Call) -> bool:
        """Whether ``call`` sits in a function that no file read ever names (not called, not
        passed as a callback): a framework's ``launch_from_openmpi`` next to the
        ``launch_from_torch`` the script calls."""
        node: ast.AST | None = call
        while (node := mod.parent.get(id(node))) is not None:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return node.name not in self._referenced
        return False

    def _arg_at(self, call: ast.Call, pos: int, name: str, mod: Module) -> Value | None:
        frame = Frame.at(mod, call)
        for kw in call.keywords:
            if kw.arg == name:
                return self.value(kw.value, frame)
        if 0 <= pos < len(call.args) and not any(
            isinstance(a, ast.Starred) for a in call.args[: pos + 1]
        ):
            return self.value(call.args[pos], frame)
        return None

    def _spawns(self, fname: str) -> list[tuple[Module, ast.Call]]:
        out = []
        for spawner in ("spawn", "start_processes", "Process"):
            for mod, call in self._calls.get(spawner, []):
                target = (
                    call.args[0]
                    if call.args
                    else next((k.value for k in call.keywords if k.arg in ("fn", "target")), None)
                )
                if target is not None and tail(target) == fname and fname:
                    out.append((mod, call))
        return out

    def spawn_env(self) -> tuple[str, int | None] | None:
        """(variable, default) when the first live spawn's count is read from the environment
        (``nprocs=int(os.environ.get("WORLD_SIZE", 1))``, directly or through one name): the
        launch's value of that variable, where known, is the count."""
        found = self._first_spawn()
        return _env_count(found[0], found[1], _spawn_count(found[1])) if found else None

    def spawn_always_reached(self) -> bool:
        """The first live ``mp.spawn`` / ``start_processes`` runs on every start of the script
        (:meth:`always_reached`): under a launcher that starts several processes, every one of
        them starts its own workers."""
        found = self._first_spawn()
        return found is not None and self.always_reached(*found)

    def _first_spawn(self) -> tuple[Module, ast.Call] | None:
        """The first live ``mp.spawn`` / ``start_processes`` call (not ``subprocess``'s)."""
        for spawner in ("spawn", "start_processes"):
            for mod, call in self._calls.get(spawner, []):
                if not self.dead(mod, call) and dotted(call.func).split(".")[0] != "subprocess":
                    return mod, call
        return None

    def spawned(self) -> tuple[str, Value, bool] | None:
        """(path:line, the count, whether the workers get LOCAL_RANK) of the first live
        ``mp.spawn`` / ``start_processes`` call: ``nprocs=`` or its third positional argument
        (``Num``, ``DeviceCount``, or Unknown; no variables set); else of a Lightning ``Trainer``
        / ``Fabric`` with ``devices=K`` (under a plain ``python`` its launcher starts the other
        processes with LOCAL_RANK set, reference/launchers.md §7)."""
        found = self._spawn_call()
        if found is not None:
            return (*found, False)
        elastic = self._elastic_launch()
        if elastic is not None:
            return (*elastic, True)
        lightning = self._lightning_devices()
        return (*lightning, True) if lightning is not None else None

    def _elastic_launch(self) -> tuple[str, Value] | None:
        """``elastic_launch(LaunchConfig(nproc_per_node=N, ...), fn)``: torchrun's own agent run
        from the script; its workers get LOCAL_RANK as under torchrun (review 28;
        torch/distributed/launcher/api.py)."""
        for mod, call in self._calls.get("elastic_launch", []):
            if self.dead(mod, call):
                continue
            config = next((k.value for k in call.keywords if k.arg == "config"), None)
            config = config if config is not None else (call.args[0] if call.args else None)
            frame = Frame.at(mod, call)
            count = self._config_nproc(config, mod, frame)
            return mod.where(call), count
        return None

    def _config_nproc(self, config: ast.expr | None, mod: Module, frame: Frame) -> Value:
        """``nproc_per_node=`` of the LaunchConfig(...) call ``config`` is (or names)."""
        if isinstance(
            config, ast.Name
        ):  # cfg = LaunchConfig(...) in the call's scope or the module's
            bound = mod.names.get((id(frame.scope), config.id)) or mod.names.get(
                (id(mod.tree), config.id)
            )
            config = next((b.value for b in bound or [] if isinstance(b.value, ast.Call)), config)
        if isinstance(config, ast.Call) and tail(config.func) == "LaunchConfig":
            nproc = next((k.value for k in config.keywords if k.arg == "nproc_per_node"), None)
            if nproc is not None:
                return self.value(nproc, frame)
        return Unknown(
            f"{mod.where(config) if config is not None else '?'}: LaunchConfig not followed"
        )

    def _lightning_devices(self) -> tuple[str, Value] | None:
        found = self._lightning_call()
        return (found[0].where(found[1]), found[2]) if found is not None else None

    def lightning_num_nodes(self) -> int | None:
        """``num_nodes=`` of the Lightning ``Trainer`` / ``Fabric`` call whose ``devices=`` was
        read: 1 when absent (its default), None when it is not a number the analysis reads."""
        found = self._lightning_call()
        if found is None:
            return None
        mod, call, _ = found
        nodes = next((k.value for k in call.keywords if k.arg == "num_nodes"), None)
        if nodes is None:
            return 1
        value = self.value(nodes, Frame.at(mod, call))
        return value.value if isinstance(value, Num) and value.value > 0 else None

    def _lightning_call(self) -> tuple[Module, ast.Call, Num] | None:
        """The first live Lightning ``Trainer`` / ``Fabric`` call with a number of devices
        (``devices=K`` or a list of K ids; "auto" and -1 are one per GPU: not a number)."""
        for cls in ("Trainer", "Fabric"):
            for mod, call in self._calls.get(cls, []):
                if self.dead(mod, call) or not {"lightning", "pytorch_lightning"} & mod.top_modules:
                    continue
                devices = next((k.value for k in call.keywords if k.arg == "devices"), None)
                if isinstance(devices, (ast.List, ast.Tuple)) and devices.elts:
                    return mod, call, Num(len(devices.elts))
                if devices is None:
                    continue
                count = self.value(devices, Frame.at(mod, call))
                if isinstance(count, Num) and count.value > 0:
                    return mod, call, count
        return None

    def _spawn_call(self) -> tuple[str, Value] | None:
        found = self._first_spawn()
        if found is None:
            return None
        mod, call = found
        count = _spawn_count(call)
        value = self.value(count, Frame.at(mod, call)) if count is not None else Num(1)
        return mod.where(call), value

    def _spawn_arg(self, call: ast.Call, pos: int, mod: Module) -> Value:
        where = mod.where(call)
        if tail(call.func) != "Process" and pos == 0:
            return Rank("local", by_process=True, origin=f"{where}: mp.spawn index")
        args = next((k.value for k in call.keywords if k.arg == "args"), None)
        if args is None and len(call.args) > 1 and tail(call.func) != "Process":
            args = call.args[1]
        shift = 0 if tail(call.func) == "Process" else 1
        if isinstance(args, (ast.Tuple, ast.List)) and 0 <= pos - shift < len(args.elts):
            frame = Frame.at(mod, call)
            return self.value(args.elts[pos - shift], frame)
        return Unknown(f"{where}: argument {pos} of the spawned function")

    # --- calls ---------------------------------------------------------------------------
    def env_value(self, var: str, default: ast.expr | None, required: bool, frame: Frame) -> Value:
        written = self._written(var, frame) if var in RANK_VARS else None
        if written is not None:
            return written
        where = frame.where()
        dflt = self.value(default, frame) if default is not None else None
        scope = (
            "local"
            if var in models.LOCAL_RANK_VARS
            else "global"
            if var in models.GLOBAL_RANK_VARS
            else ""
        )
        if not scope and var in models.LOCAL_SIZE_VARS:
            return LocalCount(var)
        if not scope:
            return Unknown(f"{where}: reads ${var}, which no launcher model sets")
        if isinstance(dflt, Rank) and dflt.scope == scope:
            return replace(dflt, env_vars=(var, *dflt.env_vars), origin=f"{where}: {var}")
        num = dflt.value if isinstance(dflt, Num) else None
        return Rank(scope, (var,), num, required and default is None, origin=f"{where}: {var}")

    def _written(self, var: str, frame: Frame) -> Value | None:
        """``var`` as the script itself may set it before reading it (``os.environ["LOCAL_RANK"]
        = os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]``, ``os.environ.setdefault(...)``). Where the
        write sits (a branch, a function never called) is not followed, so it only adds a
        possibility: the variables it reads are tried in the order the process would find them,
        and the launcher's own ``var`` stays the fallback; a literal written is a default. None:
        the script writes no such variable, or nothing usable."""
        writes = self._env_writes.get(var)
        if not writes or var in self._env_resolving:
            return None
        self._env_resolving.add(var)
        try:
            found = [(self.value(v, Frame.at(mod, v)), over) for mod, v, over in writes[:4]]
        finally:
            self._env_resolving.discard(var)
        own = Rank("local" if var in models.LOCAL_RANK_VARS else "global", (var,))
        chains: list[Value] = []
        for value, overrides in found:
            if isinstance(value, Rank) and value.env_vars:
                names = (*value.env_vars, var) if overrides else (var, *value.env_vars)
                # RANK % device_count() written into LOCAL_RANK is a local index
                scope = own.scope if value.modulo else value.scope
                chains.append(replace(value, scope=scope, env_vars=tuple(dict.fromkeys(names))))
            elif isinstance(value, Num):
                chains.append(replace(own, env_default=value.value))
            elif isinstance(value, Unknown):
                chains.append(value)
        if not chains:
            return None
        if len(chains) == 1:
            return chains[0]
        return rank_of_any_launcher(chains) or Unknown(
            f"{frame.where()}: ${var} is set by the script itself in {len(chains)} places"
        )

    def call(self, node: ast.Call, frame: Frame) -> Value:
        env = env_read(node)
        if env is not None:
            return self.env_value(env[0], env[1], env[2], frame)
        name = dotted(node.func)
        t = tail(node.func)
        arg0 = node.args[0] if node.args else None
        if (
            t in ("int", "str", "float", "round", "abs", "list", "tuple", "sorted")
            and arg0 is not None
        ):
            return self.value(arg0, frame)
        if t == "range" and arg0 is not None:
            return Seq((self.value(arg0, frame),))
        if t == "device" and name.endswith(("torch.device", "device")) and name != "device":
            return self._torch_device(node, frame)
        if t == "device" and name == "device" and "device" in frame.mod.imports:
            return self._torch_device(node, frame)
        if t == "format" and isinstance(node.func, ast.Attribute):
            fmt = node.func.value
            if (
                isinstance(fmt, ast.Constant)
                and str(fmt.value).startswith("cuda:")
                and arg0 is not None
            ):
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
            chained = self._first_set_returns(mod, func, bound)
            if chained is not None:
                values.append(chained)
                continue
            returns = [
                r.value
                for r in ast.walk(func)
                if isinstance(r, ast.Return)
                and r.value is not None
                and mod.scope_of.get(id(r)) is func
            ]
            for r in returns[:6]:
                values.append(self.value(r, Frame(mod, func, r, bound)))
        # a return the analysis cannot follow is not replaced by another return's constant
        return (
            open_world(values)
            if values
            else Unknown(f"{frame.where()}: `{dotted(node.func)}()` returns nothing")
        )

    def _first_set_returns(
        self, mod: Module, func: ast.AST, bound: tuple[tuple[str, Value], ...]
    ) -> Value | None:
        """``if "LOCAL_RANK" in os.environ: return int(os.environ["LOCAL_RANK"])`` … ``return
        0`` (or the same as ``for key in ("LOCAL_RANK", "SLURM_LOCALID"): if key in os.environ:
        return int(os.environ[key])``): the first variable set, like nested ``.get`` defaults."""
        body = getattr(func, "body", [])
        names: list[str] = []
        for stmt in body[:-1]:
            guarded = guarded_env_return(stmt)
            if guarded is None:
                if isinstance(stmt, (ast.Expr, ast.Assign)) and not names:
                    continue  # a docstring or set-up before the chain
                return None
            names += guarded
        last = body[-1] if body else None
        if not names or not isinstance(last, ast.Return) or last.value is None:
            return None
        fallback = self.value(last.value, Frame(mod, func, last, bound))
        reads = [self.env_value(n, None, False, Frame(mod, func, last, bound)) for n in names]
        return first_set([*reads, fallback])

    def _bind_args(
        self, func: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call, frame: Frame
    ) -> list[tuple[str, Value]]:
        params = param_names(func)
        if params and params[0] in ("self", "cls"):
            params = params[1:]
        out = []
        for p, a in zip(params, call.args, strict=False):
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
            starred = self.star_module(mod, func.id)
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


def _spawn_count(call: ast.Call) -> ast.expr | None:
    """A spawn call's worker count: ``nprocs=`` or its third positional argument."""
    count = next((k.value for k in call.keywords if k.arg == "nprocs"), None)
    return call.args[2] if count is None and len(call.args) > 2 else count


def _env_count(
    mod: Module, call: ast.Call, count: ast.expr | None
) -> tuple[str, int | None] | None:
    """The environment variable (and its literal default) ``count`` reads, directly or through
    one name bound in the call's scope."""
    if isinstance(count, ast.Name):
        frame = Frame.at(mod, call)
        bound = mod.names.get((id(frame.scope), count.id)) or mod.names.get(
            (id(mod.tree), count.id)
        )
        values = [b.value for b in bound or [] if isinstance(getattr(b, "value", None), ast.expr)]
        count = values[0] if len(values) == 1 else None
    if isinstance(count, ast.Call) and tail(count.func) == "int" and count.args:
        count = count.args[0]
    read = env_read(count) if count is not None else None
    if read is None:
        return None
    var, default, _ = read
    literal = default.value if isinstance(default, ast.Constant) else None
    if isinstance(literal, str) and literal.isdecimal():
        literal = int(literal)
    return var, literal if isinstance(literal, int) else None
