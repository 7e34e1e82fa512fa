"""The shape of a catalogue signal and the helpers the signal tables use.

The tables are :mod:`rankmap.explain.catalogue_device` and :mod:`rankmap.explain.catalogue_stack`;
:mod:`rankmap.explain.catalogue` assembles them. What follows describes the catalogue as a whole.

The signal catalogue: every textual recogniser of the whole-paste reader, as data.

Each :class:`Signal` is a regular expression (most are plain literals) with the categories it
supports and a weight, the segment kinds it applies to (see :mod:`rankmap.explain.document`),
whether it marks a *failure* of this family (a failure with weak support still gets a best guess;
context signals alone never do), and the fact it rests on: a section of ``shared/reference/``
or a public thread. The structured recognisers (duplicate GPU, invalid ordinal, Init lines, the
launch simulation, the script analysis) live in :mod:`rankmap.explain.patterns` and
:mod:`rankmap.explain.scoring`; this table holds everything else.

Weights: 5-6 a message that names the cause, 3-4 a symptom or a setting that points at one
category, 1-2 context that makes a category plausible. Negative weights speak against.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

ANY = frozenset({"log", "prose", "code", "shell", "config", "env"})
TEXT = frozenset({"log", "prose"})
PROSE = frozenset({"prose"})
CODE = frozenset({"code"})
NOT_PROSE = frozenset({"log", "code", "shell", "config", "env"})
NOT_LOG = frozenset({"prose", "code", "shell", "config", "env"})
LOG = frozenset({"log"})

# Any character of one sentence: a dot inside a name (torch.cuda.set_device, nvidia.com/gpu) does
# not end it.
SENTENCE = r"(?:[^.!?\n]|[.!?](?=\w))"

CUDA_DEV = "reference/cuda_devices.md"
LAUNCHERS = "reference/launchers.md"
NCCL = "reference/nccl.md"
PT = "reference/pytorch_nccl.md"


@dataclass(frozen=True)
class Signal:
    """One recogniser: pattern -> categories with weights, and the fact behind it.

    The regular expression is compiled on first use (:attr:`pattern`): a log or a paste touches
    the few signals whose prefilter keys it holds, and compiling all of them at import took about
    as long as grep takes for a gigabyte (benchmarks/explain_1gb.py)."""

    id: str
    regex: str
    supports: tuple[tuple[str, float], ...]
    fact: str
    where: frozenset[str] = ANY
    failure: bool = False  # the text shows a failure of this family (not only context)
    framework: str | None = None  # the framework the signal identifies, if any
    keys: tuple[str, ...] = ()  # lowercase substrings every match contains (see KEYS)
    negatable: bool = False  # a setting prose can deny ("not using docker"; see NEGATABLE)
    outside: bool = False  # the text shows a failure outside this family (see catalogue_family)
    flags: int = re.IGNORECASE
    fix: str | None = None  # the fix it names, where it is its category's strongest support

    @cached_property
    def pattern(self) -> re.Pattern[str]:
        return re.compile(self.regex, self.flags)


def sig(
    sid: str,
    regex: str,
    supports: dict[str, float],
    fact: str,
    *,
    where: frozenset[str] = ANY,
    failure: bool = False,
    framework: str | None = None,
    case: bool = False,
    outside: bool = False,
    fix: str | None = None,
) -> Signal:
    return Signal(
        sid,
        regex,
        tuple(supports.items()),
        fact,
        where,
        failure,
        framework,
        outside=outside,
        flags=0 if case else re.IGNORECASE,
        fix=fix,
    )
