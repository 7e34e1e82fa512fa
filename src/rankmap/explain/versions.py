"""Versions named in a paste (driver, CUDA, NCCL) and the conflicts between them.

A paste often states versions in several places: the ``nvidia-smi`` header (driver, and the
newest CUDA the driver supports), ``collect_env`` / ``torch.version.cuda`` / a ``+cu118`` wheel
(the CUDA the framework was built with), NCCL's ``NCCL version 2.18.1`` line of each rank. Two
facts of ``reference/nccl.md`` make them evidence:

- (g): a CUDA runtime newer than the driver supports fails (``driver version is insufficient``);
- (e): ranks that load different NCCL builds fail (``Mismatched NCCL version``); two nodes with
  different drivers are the usual way that happens.

Pure and bounded: text in, :class:`Versions` out; at most :data:`MAX_VALUES` values per kind.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

MAX_VALUES = 8
MAX_CHARS = 4 * 1024 * 1024

_DRIVER = re.compile(
    r"Driver Version:?\s*(\d{3}\.\d{1,3}(?:\.\d{1,3})?)|"
    r"\bdriver(?: version)?\s*[:=]?\s*(?:is\s+)?(\d{3}\.\d{2,3}(?:\.\d{1,3})?)\b",
    re.IGNORECASE,
)
_DRIVER_CUDA = re.compile(r"CUDA Version:\s*(\d{2}\.\d)", re.IGNORECASE)
_BUILT_CUDA = re.compile(
    r"torch\.version\.cuda\W{0,6}(\d{2}\.\d)|CUDA used to build PyTorch:\s*(\d{2}\.\d)|"
    r"\+cu(\d{2})(\d)\b|cudatoolkit[=\s]+(\d{2}\.\d)|pytorch-cuda[=\s]+(\d{2}\.\d)",
    re.IGNORECASE,
)
_BUILT_CUDA_WORDS = (
    "torch.version.cuda",
    "cuda used to build",
    "+cu",
    "cudatoolkit",
    "pytorch-cuda",
)
_NCCL = re.compile(
    r"NCCL version:?\s*v?(\d{1,2}\.\d{1,2}\.\d{1,2})|\bnccl[-_ ]?v?(2\.\d{1,2}\.\d{1,2})\b|"
    r"libnccl2?[=-](2\.\d{1,2}\.\d{1,2})|libnccl\.so\.(2\.\d{1,2}\.\d{1,2})|"
    r"nccl-cu1\d\s*==\s*(2\.\d{1,2}\.\d{1,2})",  # the pip wheel: nvidia-nccl-cu12==2.20.5
    re.IGNORECASE,
)
# what programs print of the NCCL they loaded: vLLM's "vLLM is using nccl==2.20.5", and
# torch.cuda.nccl.version() as a tuple ("nccl=(2, 18, 1)", "NCCL: (2, 14, 3)")
_NCCL_PRINTED = re.compile(
    r"\bnccl\s*==\s*(?P<eq>2\.\d{1,2}\.\d{1,2})\b|"
    r"\bnccl\w{0,12}\W{1,4}\(\s*(?P<a>2)\s*,\s*(?P<b>\d{1,2})\s*,\s*(?P<c>\d{1,2})\s*\)",
    re.IGNORECASE,
)
# PyTorch as collect_env and pip list give it: each wheel pins its own NCCL wheel
_TORCH = re.compile(
    r"PyTorch version:\s*(\d+\.\d+\.\d+)|\btorch\s*==\s*(\d+\.\d+\.\d+)|"
    r"\b(?:py)?torch\s+v?(\d+\.\d+\.\d+)\b",  # "node1 has torch 2.0.1" (review 27)
    re.I,
)


@dataclass
class Versions:
    """The distinct values of each kind, in order of appearance."""

    driver: list[str] = field(default_factory=list)
    driver_cuda: list[str] = field(default_factory=list)  # nvidia-smi's "CUDA Version"
    built_cuda: list[str] = field(default_factory=list)  # the framework's CUDA build
    nccl: list[str] = field(default_factory=list)
    torch: list[str] = field(default_factory=list)  # collect_env / pip listings


def _add(values: list[str], value: str) -> None:
    if value not in values and len(values) < MAX_VALUES:
        values.append(value)


def versions_in(text: str) -> Versions:
    """Every driver / CUDA / NCCL version the text names."""
    text = text[:MAX_CHARS]
    out = Versions()
    low = text.lower()  # a pattern runs only where a word it needs is in the text (fast path)
    for m in _DRIVER.finditer(text) if "driver" in low else ():
        _add(out.driver, next(g for g in m.groups() if g))
    for m in _DRIVER_CUDA.finditer(text) if "cuda version" in low else ():
        _add(out.driver_cuda, m.group(1))
    for m in _BUILT_CUDA.finditer(text) if any(w in low for w in _BUILT_CUDA_WORDS) else ():
        if m.group(3):  # +cu118 -> 11.8
            _add(out.built_cuda, f"{m.group(3)}.{m.group(4)}")
        else:
            _add(out.built_cuda, next(g for g in m.groups() if g))
    for m in _nccl_matches(text, low) if "nccl" in low else ():
        _add(out.nccl, next(g for g in m.groups() if g))
        for other in _continued(text, m.end()):  # "NCCL 2.18.1 on node1 and 2.21.5 on node2"
            _add(out.nccl, other)
    for m in _NCCL_PRINTED.finditer(text) if "nccl" in low else ():
        if m.group("eq"):
            _add(out.nccl, m.group("eq"))
        else:  # torch.cuda.nccl.version() printed as a tuple: (2, 18, 1)
            _add(out.nccl, f"{m.group('a')}.{m.group('b')}.{m.group('c')}")
    for m in _TORCH.finditer(text) if "torch" in low else ():
        _add(out.torch, next(g for g in m.groups() if g))
    return out


# The same kind's second value in the sentence of a match: "NCCL version 2.18.1 on node1 and
# 2.21.5 on node2", "2.18.1 vs 2.21.5" (a full x.y.z version: a count or a date has no two dots)
_CONTINUED = re.compile(
    r"(?:[^.\n]|\.(?=\w)){0,40}?\b(?:and|vs\.?|versus|while|whereas)\s+"
    r"(?:(?:on|in|at|the|other|another|second|one|node\w*|host\w*|machine\w*|server\w*|"
    r"containers?|pods?|ranks?)\s+){0,3}v?(2\.\d{1,2}\.\d{1,2})\b",
    re.IGNORECASE,
)


def _continued(text: str, end: int) -> list[str]:
    m = _CONTINUED.match(text, end, min(len(text), end + 120))
    return [m.group(1)] if m else []


def _nccl_matches(text: str, low: str) -> Iterator[re.Match[str]]:
    """``_NCCL.finditer(text)``, trying the regex only where a match can start: at each
    "nccl" of the text or 3 before it ("libnccl"), every match holds one there. An NCCL log
    says "nccl" on every line, and the caseless alternation costs ~300 ns a character."""
    if len(low) != len(text):  # lowercasing changed lengths: positions would not agree
        yield from _NCCL.finditer(text)
        return
    done = 0  # end of the last match: matches do not overlap
    i = low.find("nccl")
    while i != -1:
        # "libnccl…" starts 3 before; "NCCL version", "nccl-2.18.1", "nccl_v2…" at the word
        starts: tuple[int, ...] = (i - 3,) if i >= 3 and low.startswith("lib", i - 3) else ()
        starts += (i,) if low.startswith(_AT_NCCL, i) or low.startswith("nccl-cu1", i) else ()
        for start in starts:
            if start >= done and (m := _NCCL.match(text, start)):
                yield m
                done = m.end()
        i = low.find("nccl", i + 1)


# How a match of _NCCL that starts at "nccl" begins (its first two alternatives: "NCCL
# version", or "nccl", an optional one of "-_ ", an optional "v", then the 2 of 2.x.y)
_AT_NCCL = ("nccl version", *(f"nccl{sep}{v}2" for sep in ("", "-", "_", " ") for v in ("", "v")))


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdecimal())


def conflicts(v: Versions) -> list[tuple[float, str]]:
    """(points for version_mismatch, reason) for every conflict the versions show."""
    out: list[tuple[float, str]] = []
    if v.driver_cuda and v.built_cuda:
        newest = max(v.driver_cuda, key=_key)
        built = max(v.built_cuda, key=_key)
        if _key(built) > _key(newest):
            out.append(
                (
                    4.0,
                    f"the framework was built for CUDA {built}, newer than the CUDA {newest} the "
                    "driver supports (reference/nccl.md (g))",
                )
            )
    if len(v.driver) >= 2:
        out.append(
            (
                3.0,
                f"two driver versions in the input ({', '.join(v.driver[:3])}): nodes or "
                "containers differ (reference/nccl.md (g))",
            )
        )
    if len(v.torch) >= 2:
        out.append(
            (
                2.0,
                f"two PyTorch versions listed ({', '.join(v.torch[:3])}): nodes or environments "
                "differ, and each PyTorch wheel pins its own NCCL (reference/nccl.md (e))",
            )
        )
    if len(v.nccl) >= 2:
        out.append(
            (
                3.0,
                f"two NCCL versions in the input ({', '.join(v.nccl[:3])}): ranks may load "
                "different NCCL builds (reference/nccl.md (e))",
            )
        )
    return out
