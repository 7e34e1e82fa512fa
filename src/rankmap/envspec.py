"""``--env KEY=VALUE`` options and the environment a command reasons about."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from rankmap.errors import UsageError
from rankmap.redact import is_secret_name

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env_assignments(items: Iterable[str]) -> dict[str, str]:
    """``["A=1", "B="]`` -> ``{"A": "1", "B": ""}``; a missing ``=`` or bad name is a usage error."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        # The value is never echoed: it may be a credential (``--env HF-TOKEN=...``).
        if not sep:
            shown = repr(item) if not is_secret_name(item) and len(item) < 64 else "NAME"
            raise UsageError(f"--env {shown}: expected KEY=VALUE")
        if not _NAME.match(name):
            raise UsageError(f"--env {name!r}=...: not a valid environment variable name")
        out[name] = value
    return out


def effective_env(
    base: Mapping[str, str], overrides: Mapping[str, str], *, use_base: bool = True
) -> dict[str, str]:
    """The environment to reason about: ``base`` (the real one, when used) plus ``--env`` values."""
    env = dict(base) if use_base else {}
    env.update(overrides)
    return env
