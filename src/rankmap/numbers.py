"""The one way rankmap reads an integer out of text: bounded, so no input can make it crash.

Python's ``int()`` refuses strings over 4,300 digits with a ValueError some callers never expect,
and accepts 4,000-digit numbers that later become ``range(n)`` allocations. Every number rankmap
reads from user input (options, env, launch commands, scripts, pasted tool output, logs) goes
through :func:`parse_int` (usage: a bad value is an exit-2 error) or :func:`int_or_none` (evidence:
a bad value is simply not a number).
"""

from __future__ import annotations

import math
import re

from rankmap.errors import UsageError

MAX_DIGITS = 12  # 999,999,999,999: more than any rank, GPU, port, node or process count
_INT = re.compile(rf"[+-]?[0-9]{{1,{MAX_DIGITS}}}")
_DIGITS = re.compile(r"[+-]?[0-9]+")


def int_or_none(text: str | None, *, base: int = 10) -> int | None:
    """``text`` as an int when it is one of at most :data:`MAX_DIGITS` digits, else None."""
    if text is None:
        return None
    s = text.strip()
    if base == 16:
        s = s.lower().removeprefix("0x")
        if not 0 < len(s) <= MAX_DIGITS or any(c not in "0123456789abcdef" for c in s):
            return None
        value: int = int(s, 16)
        return value
    if not _INT.fullmatch(s):
        return None
    return int(s)


def parse_int(text: str, what: str) -> int:
    """``text`` as an int; a one-line :class:`UsageError` naming ``what`` when it is not one, or
    when it has more than :data:`MAX_DIGITS` digits ("too large")."""
    value = int_or_none(text)
    if value is not None:
        return value
    if _DIGITS.fullmatch(text.strip()):
        raise UsageError(f"{what}: {_shown(text)} is too large (more than {MAX_DIGITS} digits)")
    raise UsageError(f"{what}: expected an integer, got {_shown(text)}")


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 40 else text[:20] + "…" + text[-8:])


OVERFLOW: int = (
    10**MAX_DIGITS
)  # what an over-long digit run saturates to (like strtoul's ULONG_MAX)


def is_digits(text: str) -> bool:
    """True for a non-empty run of ASCII digits (``str.isdigit`` also accepts ``²``, ``٣``)."""
    return bool(text) and text.isascii() and text.isdecimal()


def saturating_int(digits: str) -> int:
    """A run of ASCII digits as an int, saturating at :data:`OVERFLOW` (never a 4,300-digit
    conversion): CUDA's own parsers (``strtoul``) saturate the same way, so a huge index stays
    "an index no GPU has"."""
    significant = digits.strip().lstrip("0")
    if len(significant) > MAX_DIGITS:
        return OVERFLOW
    try:
        return int(significant or "0")
    except ValueError:  # "²" passes str.isdigit but is no number: no GPU has that index either
        return OVERFLOW


def json_int(text: str) -> int:
    """``json.loads(..., parse_int=json_int)``: a JSON integer of at most :data:`MAX_DIGITS`."""
    value = int_or_none(text)
    if value is None:
        raise ValueError(f"the number {_shown(text)} is too large")
    return value


def json_float(text: str) -> float:
    """``json.loads(..., parse_float=json_float)``: a finite JSON number (``1e309`` is refused)."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {_shown(text)} is out of range")
    return value


def json_constant(text: str) -> float:
    """``json.loads(..., parse_constant=json_constant)``: ``NaN``/``Infinity`` are not JSON."""
    raise ValueError(f"{text} is not a JSON number")


def loads_json(text: str) -> object:
    """``json.loads`` with bounded numbers; ``ValueError`` (or JSONDecodeError) when malformed."""
    import json

    return json.loads(
        text, parse_int=json_int, parse_float=json_float, parse_constant=json_constant
    )
