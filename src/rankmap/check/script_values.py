"""The abstract values of the device-selection data flow (:mod:`rankmap.check.script_flow`).

A value says what an expression of the script holds as far as device selection cares: a rank
(tainted by a source), a number, a string, a CUDA device, an argparse argument, a choice between
values guarded by environment variables, or something the analysis could not follow (with where).
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Rank:
    """A value derived from a rank source (environment, argument, runtime call)."""

    scope: str  # local | global
    env_vars: tuple[str, ...] = ()  # variables read, first set wins
    env_default: int | None = None  # value when none is set; None: KeyError when required
    env_required: bool = False  # os.environ["X"]
    arg_dest: str | None = None  # argparse dest (the launcher may pass it)
    arg_default: int | None = None
    by_process: bool = False  # the runtime/framework knows the rank itself
    modulo: bool = False  # ... % torch.cuda.device_count()
    scaled: bool = False  # combined with a factor/offset the analysis assumes keeps ranks apart
    factor: int = 1  # rank * factor + offset, before any modulo (``local_rank + 1``, ``2 * lr``)
    offset: int = 0
    modulus: int = 0  # ... % N with a literal N (after factor/offset), 0: none
    via_cvd: bool = False  # the entry of CUDA_VISIBLE_DEVICES at this rank (a physical id)
    conditional: bool = False  # read in a branch whose condition the analysis cannot decide
    origin: str = ""  # "path:line: text" of the source


@dataclass(frozen=True)
class Num:
    value: int


@dataclass(frozen=True)
class Text:
    value: str


@dataclass(frozen=True)
class Dev:
    """A CUDA device; ``index`` None is the current device (``"cuda"``, ``.cuda()``)."""

    index: Value | None


@dataclass(frozen=True)
class DeviceCount:
    """``torch.cuda.device_count()``."""


@dataclass(frozen=True)
class LocalCount:
    """A count of one node's processes (``LOCAL_WORLD_SIZE``, ``OMPI_COMM_WORLD_LOCAL_SIZE``)."""

    what: str


@dataclass(frozen=True)
class ArgValue:
    """An argparse argument that is not a local rank (the launcher does not pass it)."""

    dest: str
    default: Value | None


@dataclass(frozen=True)
class VisibleList:
    """The entries of ``os.environ["CUDA_VISIBLE_DEVICES"].split(",")`` (physical ids)."""


@dataclass(frozen=True)
class Seq:
    items: tuple[Value, ...]


@dataclass(frozen=True)
class Namespace:
    """The result of ``parser.parse_args()``."""


@dataclass(frozen=True)
class Framework:
    """An object a framework call returned (``Accelerator()``, ``Fabric(...)``)."""

    name: str


@dataclass(frozen=True)
class ModuleRef:
    """An imported module: a local one (``path``) or an external dotted name."""

    name: str
    path: str | None = None


@dataclass(frozen=True)
class Nothing:
    """``None``."""


@dataclass(frozen=True)
class Unknown:
    why: str  # "path:line: what could not be followed"
    cyclic: bool = False  # a value that refers to itself (dropped when others are known)


@dataclass(frozen=True)
class Choice:
    """Alternatives: the first whose variables are all set applies (``()``: always)."""

    options: tuple[tuple[tuple[str, ...], Value], ...]


Value = (
    Rank
    | Num
    | Text
    | Dev
    | DeviceCount
    | LocalCount
    | ArgValue
    | Seq
    | VisibleList
    | Namespace
    | Framework
    | ModuleRef
    | Nothing
    | Unknown
    | Choice
)


def score(v: Value | None) -> int:
    """How much a value says about a per-rank device; the analysis keeps the most telling one.

    A rank beats a constant: between a per-rank and a constant device on paths the analysis cannot
    tell apart, it keeps the per-rank one (a false alarm costs more than a miss).
    """
    if isinstance(v, Rank):
        return 5 if not v.scaled else 4
    if isinstance(v, Dev):
        return score(v.index) if v.index is not None else 1
    if isinstance(v, Choice):
        return max((score(o) for _, o in v.options), default=0)
    if isinstance(v, ArgValue):
        return 3
    if isinstance(v, Num):
        return 2
    if isinstance(v, Seq):
        return score(v.items[0]) if v.items else 0
    if isinstance(v, Text):
        return 1
    return 0


PER_RANK = 4  # score of a value derived from a rank (scaled or not)


def best(values: list[Value]) -> Value:
    """The most telling of ``values`` (the first on a tie)."""
    if not values:
        return Unknown("no value")
    kept = [v for v in values if not (isinstance(v, Unknown) and v.cyclic)] or values
    top = max(kept, key=score)
    # a constant never stands for a value the analysis could not follow (``default if value is
    # None else int(value)`` with ``value`` unknown is not the default): open world (review 24)
    unknown = next((v for v in kept if isinstance(v, Unknown)), None)
    if unknown is not None and score(top) < PER_RANK:
        return unknown
    return top


def first_set(values: list[Value]) -> Value | None:
    """``os.environ.get("LOCAL_RANK") or os.environ["SLURM_LOCALID"] or 0``: Python's ``or``
    gives the first operand that is set (``get`` returns None when a variable is unset, and a
    set variable is a non-empty, true string), so the reads chain like nested defaults."""
    *head, last = values
    # (a required read, os.environ["X"] or int() of one, is never None: its `or` tests the
    # number, 0 included — review 20)
    reads = [
        r
        for r in head
        if isinstance(r, Rank) and r.env_vars and r.env_default is None and not r.env_required
    ]
    if not reads or len(reads) != len(head) or any(r.by_process for r in reads):
        return None
    names = tuple(n for r in reads for n in r.env_vars)
    if isinstance(last, Num):
        return replace(reads[0], env_vars=names, env_default=last.value, env_required=False)
    if isinstance(last, Rank) and last.scope == reads[0].scope and last.env_vars:
        return replace(last, env_vars=tuple(dict.fromkeys((*names, *last.env_vars))))
    return None


def rank_of_any_launcher(values: list[Value]) -> Value | None:
    """One rank read through call sites that read different launchers' variables (a framework's
    ``launch_from_torch`` reads LOCAL_RANK, ``launch_from_slurm`` SLURM_LOCALID, and both call one
    ``launch(local_rank=...)``): each is the path of its own launcher, so the process reads
    whichever of them its launcher sets (first set wins), not the first call site's alone."""
    ranks = [v for v in values if isinstance(v, Rank) and v.env_vars and not v.via_cvd]
    if len(ranks) < 2 or len({r.scope for r in ranks}) != 1 or len({r.env_vars for r in ranks}) < 2:
        return None
    names = tuple(dict.fromkeys(n for r in ranks for n in r.env_vars))
    default = next((r.env_default for r in ranks if r.env_default is not None), None)
    required = all(r.env_required for r in ranks)
    return replace(ranks[0], env_vars=names, env_default=default, env_required=required)


def open_world(values: list[Value]) -> Value:
    """The value on paths the analysis cannot tell apart: the most telling one (:func:`best`),
    except that a constant or plain text never stands for a binding that may replace it and could
    not be followed (``local_rank = 0`` and, in a loop, ``local_rank = int(environ[v])``): the
    value is unknown then, not the constant (a false error costs more than a miss)."""
    chosen = best(values)
    unfollowed = [v for v in values if _unfollowed(v)]
    if unfollowed and score(chosen) <= score(Num(0)):
        return unfollowed[0]
    return chosen


def _unfollowed(v: Value) -> bool:
    """An unknown value, or a device whose index is unknown (``f"cuda:{v}"``, v unread)."""
    if isinstance(v, Dev):
        return v.index is not None and _unfollowed(v.index)
    return isinstance(v, Unknown) and not v.cyclic


def with_modulo(v: Value) -> Value:
    """``v % torch.cuda.device_count()``."""
    if isinstance(v, Rank):
        return replace(v, modulo=True)
    if isinstance(v, Choice):
        return Choice(tuple((g, with_modulo(o)) for g, o in v.options))
    if isinstance(v, Dev) and v.index is not None:
        return Dev(with_modulo(v.index))
    return v


def with_literal_modulus(v: Value, modulus: int) -> Value:
    """``v % modulus`` with a literal modulus (``local_rank % 2``): exact for a rank read before
    any other modulo, else :func:`scaled` (open world)."""
    if isinstance(v, Rank) and not (v.modulo or v.scaled or v.via_cvd or v.modulus):
        return replace(v, modulus=modulus)
    if isinstance(v, Choice):
        return Choice(tuple((g, with_literal_modulus(o, modulus)) for g, o in v.options))
    return scaled(v)


def linear(v: Value, factor: int, offset: int) -> Value:
    """``v * factor + offset`` with literal numbers: exact for a rank read before any modulo
    (the index it selects is computed), else :func:`scaled` (open world)."""
    if isinstance(v, Rank) and not (v.modulo or v.scaled or v.via_cvd or v.modulus):
        return replace(v, factor=v.factor * factor, offset=v.offset * factor + offset)
    if isinstance(v, Choice):
        return Choice(tuple((g, linear(o, factor, offset)) for g, o in v.options))
    return scaled(v)


def scaled(v: Value) -> Value:
    """``v`` combined with a factor or offset the analysis cannot evaluate."""
    if isinstance(v, Rank):
        return replace(v, scaled=True)
    if isinstance(v, Choice):
        return Choice(tuple((g, scaled(o)) for g, o in v.options))
    return v


def conditional(v: Value) -> Value:
    """``v`` as read on a path that may not run (a missing variable is then no error)."""
    if isinstance(v, Rank):
        return replace(v, conditional=True)
    if isinstance(v, Choice):
        return Choice(tuple((g, conditional(o)) for g, o in v.options))
    if isinstance(v, Dev) and v.index is not None:
        return Dev(conditional(v.index))
    return v


def as_device(v: Value) -> Value:
    """What ``torch.device(v)`` / ``.to(v)`` / ``set_device(v)`` selects from ``v``."""
    if isinstance(v, Text):
        s = v.value.strip()
        if s == "cuda":
            return Dev(None)
        if s.startswith("cuda:") and s[5:].isdecimal():
            return Dev(Num(int(s[5:])))
        if s.isdecimal():
            return Dev(Num(int(s)))
        return v
    if isinstance(v, (Rank, Num, ArgValue)):
        return Dev(v)
    if isinstance(v, Choice):
        return Choice(tuple((g, as_device(o)) for g, o in v.options))
    if isinstance(v, Seq) and v.items:
        return as_device(v.items[0])
    return v
