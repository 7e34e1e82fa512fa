"""How a training script selects its CUDA device - read with ``ast`` only, never imported or run.

The result (:class:`DeviceSelection`) says where the device index comes from: ``LOCAL_RANK`` (env
or a ``--local_rank`` argument), the global rank (``RANK``, ``dist.get_rank()``, ``SLURM_PROCID``),
a constant, ``local_rank % torch.cuda.device_count()``, accelerate's ``PartialState`` (which picks
``cuda:{local_process_index % device_count}``), or nothing (each process stays on its cuda:0).
Facts: reference/pytorch_nccl.md §1, launchers.md §3-4.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass, field

LOCAL_VARS = (
    "LOCAL_RANK",
    "SLURM_LOCALID",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MPI_LOCALRANKID",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "PMI_LOCAL_RANK",
)
GLOBAL_VARS = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK")
_SET_DEVICE = ("set_device",)
_MAX_DEPTH = 8


@dataclass(frozen=True)
class DeviceSelection:
    """Where a script's CUDA device index comes from (see module docstring)."""

    kind: str  # local_rank | global_rank | constant | local_rank_modulo | none | accelerate
    #            | assumed_local_rank | unknown
    env_vars: tuple[str, ...] = ()  # env variables read for the index, first found wins
    env_default: int | None = None  # value when none is set; None: KeyError
    env_required: bool = False  # os.environ["X"] (KeyError when missing)
    arg_dest: str | None = None  # argparse dest read for the index (local_rank)
    constant: int | None = None
    modulo: bool = False  # ... % torch.cuda.device_count()
    dist_rank: bool = False  # torch.distributed.get_rank()
    line: int | None = None
    call: str | None = None  # the source text of the selecting call
    declared_args: tuple[str, ...] = ()  # argparse spellings declared for a local rank
    arg_default: int | None = None
    tolerant_args: bool = False  # parse_known_args: unknown arguments are ignored
    parse_error: str | None = None
    path: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def uses_index(self) -> bool:
        """True when the script selects a per-process index (not ``none``)."""
        return self.kind not in ("none",)


ASSUMED = DeviceSelection(
    kind="assumed_local_rank",
    env_vars=("LOCAL_RANK",),
    env_required=True,
    call="torch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
)


def scan_script(source: str, *, path: str | None = None) -> DeviceSelection:
    """Classify the device selection of ``source`` (a whole script or a snippet)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        try:
            tree = ast.parse(textwrap.dedent(source))
        except (SyntaxError, ValueError):
            where = f"{path or '<script>'}:{getattr(exc, 'lineno', '?')}"
            msg = getattr(exc, "msg", str(exc))
            return _replace(ASSUMED, parse_error=f"{where}: {msg}", path=path)
    except (MemoryError, RecursionError):  # CPython's parser on pathologically nested code
        return _replace(ASSUMED, parse_error=f"{path or '<script>'}: nested too deeply", path=path)
    try:
        return _Scanner(tree, source, path).result()
    except RecursionError:
        return _replace(ASSUMED, parse_error=f"{path or '<script>'}: nested too deeply", path=path)


def _replace(sel: DeviceSelection, **kw: object) -> DeviceSelection:
    from dataclasses import replace

    return replace(sel, **kw)  # type: ignore[arg-type]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Call):
        return f"{_dotted(node.func)}()"
    return ""


@dataclass
class _Index:
    """Partial classification of an index expression."""

    kind: str = "unknown"
    env_vars: tuple[str, ...] = ()
    env_default: int | None = None
    env_required: bool = False
    arg_dest: str | None = None
    constant: int | None = None
    modulo: bool = False
    dist_rank: bool = False
    note: str | None = None


class _Scanner:
    def __init__(self, tree: ast.Module, source: str, path: str | None) -> None:
        self.tree = tree
        self.source = source
        self.path = path
        self.assign: dict[str, ast.expr] = {}
        self.declared: list[str] = []
        self.arg_default: int | None = None
        self.tolerant = False
        self.calls: list[ast.Call] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                self._record(node.targets[0], node.value)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                self._record(node.target, node.value)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
                self._argparse(node)
        self.calls.sort(key=lambda c: (c.lineno, c.col_offset))

    def _record(self, target: ast.expr, value: ast.expr) -> None:
        name = _dotted(target)
        if name and name not in self.assign:
            self.assign[name] = value
            if "." in name:  # self.local_rank = ... is also read as local_rank
                self.assign.setdefault(name.rsplit(".", 1)[1], value)

    def _argparse(self, call: ast.Call) -> None:
        fname = _dotted(call.func)
        if fname.endswith("parse_known_args"):
            self.tolerant = True
        if not fname.endswith("add_argument"):
            return
        names = [
            a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        if not any("local" in n and "rank" in n for n in names):
            return
        self.declared += [n for n in names if n.startswith("--")]
        for kw in call.keywords:
            if (
                kw.arg == "default"
                and isinstance(kw.value, ast.Constant)
                and isinstance(kw.value.value, int)
            ):
                self.arg_default = kw.value.value
            if kw.arg == "default" and isinstance(kw.value, ast.UnaryOp):
                const = kw.value.operand
                if isinstance(const, ast.Constant) and isinstance(const.value, int):
                    self.arg_default = -const.value

    def result(self) -> DeviceSelection:
        common = {
            "declared_args": tuple(self.declared),
            "arg_default": self.arg_default,
            "tolerant_args": self.tolerant,
            "path": self.path,
        }
        for call in self.calls:
            fname = _dotted(call.func)
            if fname.split(".")[-1] in _SET_DEVICE and call.args:
                return self._selection(call.args[0], call, **common)
        for call in self.calls:
            for kw in call.keywords:
                if kw.arg == "device_id" and _dotted(call.func).endswith("init_process_group"):
                    return self._selection(kw.value, call, **common)
        for call in self.calls:
            fname = _dotted(call.func).split(".")[-1]
            if fname in ("Accelerator", "PartialState", "AcceleratorState"):
                return DeviceSelection(
                    kind="accelerate",
                    env_vars=("LOCAL_RANK",),
                    env_default=0,
                    modulo=True,
                    line=call.lineno,
                    call=self._text(call),
                    notes=(
                        "accelerate's PartialState selects cuda:{local_process_index % "
                        "device_count} (accelerate >= 0.33; older versions cuda:local_process_index).",
                    ),
                    **common,  # type: ignore[arg-type]
                )
            if fname in ("initialize", "init_distributed") and "deepspeed" in _dotted(call.func):
                return DeviceSelection(
                    kind="local_rank",
                    env_vars=("LOCAL_RANK",),
                    env_required=True,
                    line=call.lineno,
                    call=self._text(call),
                    notes=("DeepSpeed's engine calls torch.cuda.set_device(local_rank).",),
                    **common,  # type: ignore[arg-type]
                )
        for call in self.calls:
            found = self._device_string(call)
            if found is not None:
                return self._selection(found, call, **common)
        notes = []
        for call in self.calls:
            if any(
                kw.arg == "device_map"
                and isinstance(kw.value, ast.Constant)
                and kw.value.value == "auto"
                for kw in call.keywords
            ):
                notes.append(
                    f"line {call.lineno}: device_map='auto' spreads one model over every visible "
                    "GPU of each process; it selects no device per rank."
                )
                break
        return DeviceSelection(kind="none", notes=tuple(notes), **common)  # type: ignore[arg-type]

    def _device_string(self, call: ast.Call) -> ast.expr | None:
        fname = _dotted(call.func)
        tail = fname.split(".")[-1]
        if tail == "device" and len(call.args) == 2:
            first = call.args[0]
            if isinstance(first, ast.Constant) and first.value == "cuda":
                return call.args[1]
        if tail == "cuda" and call.args and "torch." not in fname[:6]:
            return call.args[0]
        for arg in [*call.args, *(kw.value for kw in call.keywords)]:
            inner = self._cuda_index_in_string(arg)
            if inner is not None:
                return inner
        return None

    def _cuda_index_in_string(self, node: ast.expr, depth: int = 0) -> ast.expr | None:
        if isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and str(head.value).startswith("cuda:"):
                rest = str(head.value)[5:]
                if rest.isdigit():
                    return ast.Constant(int(rest))
                if len(node.values) > 1 and isinstance(node.values[1], ast.FormattedValue):
                    return node.values[1].value
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("cuda:")
            and node.value[5:].isdigit()
        ):
            return ast.Constant(int(node.value[5:]))
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("format") and node.args:
            base = node.func.value if isinstance(node.func, ast.Attribute) else None
            if isinstance(base, ast.Constant) and str(base.value).startswith("cuda:"):
                return node.args[0]
        if (
            isinstance(node, ast.BinOp)
            and isinstance(node.op, ast.Add)
            and isinstance(node.left, ast.Constant)
            and node.left.value == "cuda:"
        ):
            return node.right
        if isinstance(node, ast.Name) and depth < 2 and node.id in self.assign:
            return self._cuda_index_in_string(self.assign[node.id], depth + 1)
        if isinstance(node, ast.Call) and _dotted(node.func).endswith("device") and node.args:
            return self._cuda_index_in_string(node.args[0], depth + 1)
        return None

    def _selection(self, expr: ast.expr, call: ast.Call, **common: object) -> DeviceSelection:
        idx = self._classify(expr, 0)
        kind = idx.kind
        if kind == "local_rank" and idx.modulo:
            kind = "local_rank_modulo"
        notes = (idx.note,) if idx.note else ()
        return DeviceSelection(
            kind=kind,
            env_vars=idx.env_vars,
            env_default=idx.env_default,
            env_required=idx.env_required,
            arg_dest=idx.arg_dest,
            constant=idx.constant,
            modulo=idx.modulo,
            dist_rank=idx.dist_rank,
            line=call.lineno,
            call=self._text(call),
            notes=notes,
            **common,  # type: ignore[arg-type]
        )

    def _text(self, node: ast.AST) -> str:
        text = ast.get_source_segment(self.source, node) or _dotted(node)
        return " ".join(text.split())[:160]

    def _classify(self, node: ast.expr, depth: int) -> _Index:
        if depth > _MAX_DEPTH:
            return _Index()
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, int)
            and not isinstance(node.value, bool)
        ):
            return _Index("constant", constant=node.value)
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            s = node.value
            if s.isdigit():
                return _Index("constant", constant=int(s))
            inner = self._cuda_index_in_string(node)
            return self._classify(inner, depth + 1) if inner is not None else _Index("none")
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            left = self._classify(node.left, depth + 1)
            if "device_count" in ast.dump(node.right) or isinstance(node.right, ast.Name):
                left.modulo = True
            return left
        if isinstance(node, ast.Call):
            return self._classify_call(node, depth)
        if isinstance(node, ast.Subscript):
            env = _env_read(node)
            if env is not None:
                return _env_index(env[0], None, required=True)
            return self._classify(node.slice, depth + 1)  # devices[local_rank]
        if isinstance(node, (ast.BoolOp,)):
            return self._classify(node.values[0], depth + 1)
        if isinstance(node, ast.IfExp):
            return self._classify(node.body, depth + 1)
        if isinstance(node, ast.JoinedStr):
            inner = self._cuda_index_in_string(node)
            return self._classify(inner, depth + 1) if inner is not None else _Index()
        name = _dotted(node)
        if name in self.assign and self.assign[name] is not node:
            return self._classify(self.assign[name], depth + 1)
        short = name.rsplit(".", 1)[-1]
        if isinstance(node, ast.Attribute) and short in self.assign:
            return self._classify(self.assign[short], depth + 1)
        return _by_name(name, short)

    def _classify_call(self, node: ast.Call, depth: int) -> _Index:
        fname = _dotted(node.func)
        tail = fname.split(".")[-1]
        env = _env_read(node)
        if env is not None:
            return _env_index(env[0], env[1], required=False)
        if tail in ("int", "str") and node.args:
            return self._classify(node.args[0], depth + 1)
        if tail == "get_rank":
            return _Index("global_rank", env_vars=("RANK",), dist_rank=True)
        if tail in ("get_local_rank", "get_node_local_rank"):
            return _Index("local_rank", env_vars=("LOCAL_RANK",), env_default=0)
        if tail == "device" and node.args:
            return self._classify(node.args[-1], depth + 1)
        if tail == "current_device":
            return _Index(
                "none", note="torch.cuda.current_device() is cuda:0 unless set_device ran"
            )
        return _Index(note=f"could not follow {fname}()")


def _env_read(node: ast.expr) -> tuple[str, int | None] | None:
    """``os.environ["X"]`` / ``os.environ.get("X", d)`` / ``os.getenv("X", d)`` -> (X, d)."""
    if isinstance(node, ast.Subscript) and _dotted(node.value).endswith("environ"):
        key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value, None
    if isinstance(node, ast.Call):
        fname = _dotted(node.func)
        if fname.endswith(("environ.get", "getenv")) and node.args:
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                default = None
                if len(node.args) > 1:
                    d = node.args[1]
                    if isinstance(d, ast.Constant) and str(d.value).lstrip("-").isdigit():
                        default = int(str(d.value))
                return key.value, default
    return None


def _env_index(var: str, default: int | None, *, required: bool) -> _Index:
    if var in GLOBAL_VARS:
        kind = "global_rank"
    elif var in LOCAL_VARS or "LOCAL" in var:
        kind = "local_rank"
    else:
        kind = "unknown"
    return _Index(kind, env_vars=(var,), env_default=default, env_required=required)


def _by_name(name: str, short: str) -> _Index:
    low = short.lower()
    if low in ("local_process_index",):
        return _Index("local_rank", env_vars=("LOCAL_RANK",), env_default=0)
    if low in ("process_index",):
        return _Index("global_rank", env_vars=("RANK",), dist_rank=True)
    if "local" in low and "rank" in low:
        if name.startswith(("args.", "opt.", "opts.", "cfg.", "config.", "hparams.")):
            return _Index("local_rank", arg_dest="local_rank", note=f"{name} from the command line")
        return _Index(
            "local_rank",
            env_vars=("LOCAL_RANK",),
            env_default=0,
            note=f"{name!r} is taken to hold LOCAL_RANK (its origin was not found)",
        )
    if low in ("rank", "global_rank", "world_rank") or low.endswith("_rank"):
        return _Index(
            "global_rank",
            env_vars=("RANK",),
            dist_rank=True,
            note=f"{name!r} is taken to hold the global rank (its origin was not found)",
        )
    return _Index(note=f"could not tell where {name or 'the index'} comes from")
