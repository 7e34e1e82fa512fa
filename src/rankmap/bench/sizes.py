"""Pure parts of ``rankmap bench``: sizes, the sweep, nccl-tests' bandwidth formulas, results.

Formulas as in nccl-tests (``doc/PERFORMANCE.md`` there): ``algbw = size / time`` (GB/s,
1 GB = 1e9 bytes) and ``busbw = algbw x factor`` with factor ``2(n-1)/n`` for all-reduce,
``(n-1)/n`` for all-gather and reduce-scatter and ``1`` for broadcast. ``size`` is the bytes of
the full buffer: for all-gather the gathered output, for reduce-scatter the input.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rankmap.errors import UsageError

OPS: tuple[str, ...] = ("all_reduce", "all_gather", "reduce_scatter", "broadcast")
DTYPE_SIZES: dict[str, int] = {
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float64": 8,
    "int32": 4,
    "int64": 8,
    "int8": 1,
    "uint8": 1,
}
# nccl-tests spells the types like this in its table.
DTYPE_NAMES: dict[str, str] = {
    "float32": "float",
    "float16": "half",
    "bfloat16": "bfloat16",
    "float64": "double",
    "int32": "int32",
    "int64": "int64",
    "int8": "int8",
    "uint8": "uint8",
}
_SUFFIX = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMG]?)(I?B)?\s*$", re.IGNORECASE)
MAX_SWEEP_SIZES = 64


def parse_size(text: str) -> int:
    """``"1K"`` -> 1024, ``"4M"`` -> 4194304, ``"512"`` -> 512 (binary suffixes, like nccl-tests)."""
    m = _SIZE_RE.match(text)
    if not m:
        raise UsageError(f"bad size {text!r}: expected a number with an optional K, M or G suffix")
    return int(m.group(1)) * _SUFFIX[m.group(2).upper()]


def format_size(nbytes: int) -> str:
    """1024 -> ``"1K"``, 1536 -> ``"1536"``; the shortest exact spelling."""
    for suffix in ("G", "M", "K"):
        unit = _SUFFIX[suffix]
        if nbytes >= unit and nbytes % unit == 0:
            return f"{nbytes // unit}{suffix}"
    return str(nbytes)


def busbw_factor(op: str, nranks: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``op`` for ``nranks`` ranks."""
    if op not in OPS:
        raise UsageError(f"unknown op {op!r} (choose from {', '.join(OPS)})")
    if nranks < 1:
        raise UsageError("the number of ranks must be at least 1")
    if op == "all_reduce":
        return 2 * (nranks - 1) / nranks
    if op in ("all_gather", "reduce_scatter"):
        return (nranks - 1) / nranks
    return 1.0


def element_count(op: str, size: int, dtype: str, nranks: int) -> int:
    """Elements of the full buffer for ``size`` bytes; all-gather / reduce-scatter round down to a
    multiple of ``nranks`` (each rank owns count / nranks), as nccl-tests does."""
    count = size // DTYPE_SIZES[dtype]
    if op in ("all_gather", "reduce_scatter"):
        count -= count % nranks
    return count


def sweep(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    """Sizes ``min, min*f, ...`` up to ``max`` (like nccl-tests ``-b -e -f``)."""
    if min_bytes < 1 or max_bytes < min_bytes:
        raise UsageError(f"size range {min_bytes}..{max_bytes} is empty (need 1 <= -b <= -e)")
    if factor < 2:
        raise UsageError(f"-f {factor}: the step factor must be at least 2")
    sizes = [min_bytes]
    while sizes[-1] * factor <= max_bytes:
        sizes.append(sizes[-1] * factor)
        if len(sizes) > MAX_SWEEP_SIZES:
            raise UsageError("the sweep has more than 64 sizes; raise -f or narrow -b/-e")
    return sizes


@dataclass(frozen=True)
class BenchResult:
    """One row of the table: a size measured with ``iters`` iterations."""

    op: str
    size: int  # bytes of the full buffer (nccl-tests' "size")
    count: int  # elements of the full buffer
    dtype: str
    time_us: float  # average time of one operation, averaged over ranks
    algbw: float  # GB/s
    busbw: float  # GB/s
    wrong: int  # elements that did not hold the expected value

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "size": self.size,
            "count": self.count,
            "dtype": self.dtype,
            "time_us": round(self.time_us, 3),
            "algbw": round(self.algbw, 6),
            "busbw": round(self.busbw, 6),
            "wrong": self.wrong,
        }


def make_result(
    op: str, size: int, count: int, dtype: str, seconds: float, nranks: int, wrong: int
) -> BenchResult:
    """Apply the formulas to one measured average time (seconds per operation)."""
    nbytes = count * DTYPE_SIZES[dtype]
    algbw = nbytes / 1e9 / seconds if seconds > 0 else 0.0
    return BenchResult(
        op=op,
        size=nbytes,
        count=count,
        dtype=dtype,
        time_us=seconds * 1e6,
        algbw=algbw,
        busbw=algbw * busbw_factor(op, nranks),
        wrong=wrong,
    )


def avg_busbw(results: Sequence[BenchResult]) -> float:
    """Mean bus bandwidth over all sizes (nccl-tests' ``Avg bus bandwidth``)."""
    return sum(r.busbw for r in results) / len(results) if results else 0.0


def below_min(avg: float, min_busbw: float | None) -> bool:
    """nccl-tests' NCCL_TESTS_MIN_BW rule as ``--min-busbw``: fail when avg < 0.9 x minimum."""
    return min_busbw is not None and avg < 0.9 * min_busbw


def table_header(op: str) -> list[str]:
    """Header lines of the nccl-tests-like table."""
    root = "root" if op == "broadcast" else "redop"
    return [
        f"#{'size':>11} {'count':>12} {'type':>8} {root:>6} {'time':>10} {'algbw':>8} "
        f"{'busbw':>8} {'#wrong':>6}",
        f"#{'(B)':>11} {'(elements)':>12} {'':>8} {'':>6} {'(us)':>10} {'(GB/s)':>8} "
        f"{'(GB/s)':>8} {'':>6}",
    ]


def table_row(r: BenchResult) -> str:
    """One table row."""
    redop = "0" if r.op == "broadcast" else ("none" if r.op == "all_gather" else "sum")
    return (
        f"{r.size:>12} {r.count:>12} {DTYPE_NAMES[r.dtype]:>8} {redop:>6} {r.time_us:>10.1f} "
        f"{r.algbw:>8.3f} {r.busbw:>8.3f} {r.wrong:>6}"
    )
