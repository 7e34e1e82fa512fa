"""``--env KEY=VALUE`` options and the environment a command reasons about."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rankmap.errors import UsageError

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env_assignments(items: Iterable[str]) -> dict[str, str]:
    """``["A=1", "B="]`` -> ``{"A": "1", "B": ""}``; a missing ``=`` or bad name is a usage error."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--env {item!r}: expected KEY=VALUE")
        if not _NAME.match(name):
            raise UsageError(f"--env {item!r}: {name!r} is not a valid environment variable name")
        out[name] = value
    return out


def effective_env(
    base: Mapping[str, str], overrides: Mapping[str, str], *, use_base: bool = True
) -> dict[str, str]:
    """The environment to reason about: ``base`` (the real one, when used) plus ``--env`` values."""
    env = dict(base) if use_base else {}
    env.update(overrides)
    return env
