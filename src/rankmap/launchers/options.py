"""A small option reader shared by the launcher simulations (argparse-like, no exits)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rankmap.errors import UsageError
from rankmap.numbers import parse_int


@dataclass(frozen=True)
class OptSpec:
    """Options of one launcher: long names (``_`` form) -> takes a value; short aliases."""

    prog: str
    takes_value: Mapping[str, bool]
    short: Mapping[str, str] = field(default_factory=dict)  # "-m" -> "module"
    strict: bool = True  # unknown options are usage errors (torchrun, accelerate, deepspeed)
    single_dash_long: bool = False  # Open MPI/Hydra accept -np, -hostfile...
    guess_values: bool = False  # unknown ``--opt X``: X is its value unless it looks like a script
    # argparse's allow_abbrev (torchrun): ``--nnode`` is ``--nnodes`` when no other option starts
    # so; a prefix of several options is argparse's "ambiguous option" error.
    abbrev: bool = False


@dataclass
class Parsed:
    """Option values (last wins; ``multi`` keeps every value), the rest, and ignored options."""

    values: dict[str, str | bool] = field(default_factory=dict)
    multi: dict[str, list[str]] = field(default_factory=dict)
    rest: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)

    def get(self, name: str, default: str | None = None) -> str | None:
        v = self.values.get(name)
        return v if isinstance(v, str) else default

    def flag(self, name: str) -> bool:
        return bool(self.values.get(name))


def norm(name: str) -> str:
    """``--nproc-per-node`` -> ``nproc_per_node``."""
    return name.lstrip("-").replace("-", "_")


def parse_options(argv: Sequence[str], spec: OptSpec) -> Parsed:
    """Read options up to the first positional (the program/script); the rest is returned."""
    out = Parsed()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            out.rest = list(argv[i + 1 :])
            return out
        if not arg.startswith("-") or arg == "-":
            out.rest = list(argv[i:])
            return out
        name, eq, inline = arg.partition("=")
        key = _key(name, spec)
        if key is None and not arg.startswith("--") and len(arg) > 2 and arg[:2] in spec.short:
            # -n4 / -N2 style
            key, inline, eq = spec.short[arg[:2]], arg[2:], "="
        if key is None:
            if spec.strict:
                raise UsageError(f"{spec.prog}: unrecognized option {name!r}")
            out.unknown.append(arg)
            nxt = argv[i + 1] if i + 1 < len(argv) else None
            if (
                spec.guess_values
                and not eq
                and nxt is not None
                and not nxt.startswith("-")
                and not nxt.endswith((".py", ".sh"))
            ):
                out.unknown.append(nxt)
                i += 1
            i += 1
            continue
        if spec.takes_value[key]:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                raise UsageError(f"{spec.prog}: option {name} expects a value")
            out.values[key] = value
            out.multi.setdefault(key, []).append(value)
        else:
            out.values[key] = True if not eq else inline.lower() not in ("0", "false", "no")
        i += 1
    return out


def _key(name: str, spec: OptSpec) -> str | None:
    if name in spec.short:
        return spec.short[name]
    if name.startswith("--") or (spec.single_dash_long and name.startswith("-")):
        key = norm(name)
        if key in spec.takes_value:
            return key
        if spec.abbrev and name.startswith("--") and key:
            return _prefix_key(name, spec)
    return None


def _prefix_key(name: str, spec: OptSpec) -> str | None:
    """The option ``name`` abbreviates, as argparse matches prefixes (exact names first).

    torchrun registers every multi-word option twice (``--nproc-per-node``, ``--nproc_per_node``),
    so ``--nproc`` matches two option strings: argparse's "ambiguous option" (Python 3.11), while
    ``--nproc_per`` and ``--nnode`` are unambiguous.
    """
    spellings = {f"--{k}": k for k in spec.takes_value} | {
        f"--{k.replace('_', '-')}": k for k in spec.takes_value
    }
    found = sorted(s for s in spellings if s.startswith(name))
    if len(found) > 1:
        raise UsageError(f"{spec.prog}: ambiguous option: {name} could match {', '.join(found)}")
    return spellings[found[0]] if found else None


def int_value(
    prog: str, name: str, value: str | None, default: int, *, minimum: int | None = None
) -> int:
    """An integer option value (at least ``minimum`` when given); a usage error names it."""
    if value is None:
        return default
    number = parse_int(value, f"{prog}: {name}")
    if minimum is not None and number < minimum:
        raise UsageError(f"{prog}: {name} must be >= {minimum}, got {number}")
    return number


def option_value(argv: Sequence[str], names: Sequence[str]) -> str | None:
    """The value of the first option in ``names`` (``--opt v`` or ``--opt=v``), or None."""
    for i, arg in enumerate(argv):
        name, eq, val = arg.partition("=")
        if name in names:
            return val if eq else (argv[i + 1] if i + 1 < len(argv) else None)
    return None


def replace_option(argv: Sequence[str], names: Sequence[str], value: str) -> list[str] | None:
    """``argv`` with the value of the first option in ``names`` replaced, or None if absent."""
    out = list(argv)
    for i, arg in enumerate(out):
        name, eq, _ = arg.partition("=")
        if name in names:
            if eq:
                out[i] = f"{name}={value}"
            elif i + 1 < len(out):
                out[i + 1] = value
            return out
    return None
