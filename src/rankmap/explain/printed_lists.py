"""Visible-devices lists the ranks print themselves (``[rank1] HIP_VISIBLE_DEVICES=0 …``,
``rank 3: CUDA_VISIBLE_DEVICES=3``): the same one-GPU list in every rank is a list narrowed for
the whole job (a module file, an exported variable); a different single GPU per rank is a
per-process list (a scheduler's binding, Ray, a wrapper). reference/cuda_devices.md §1 (the list
decides what a process sees); ROCm's HIP_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES do the same.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice

# a rank's own line: "[rank1]", "rank 1:", "RANK=1", "local_rank 1" then one of the lists
_RANK_LIST = re.compile(
    r"\b(?:local_)?rank\]?\s*[=:]?\s*\[?(?P<rank>\d{1,5})\]?[^\n]{0,120}?\b"
    r"(?P<var>CUDA|HIP|ROCR)_VISIBLE_DEVICES['\"]?\s*[=:]\s*['\"]?(?P<value>[\w,.-]{1,200})",
    re.IGNORECASE,
)
MAX_LINES = 512  # rank lines read: a job of thousands of ranks prints the same shape
# a rank's own report of its device: "0 using device 0", "rank 2 uses GPU 0" (not "on cuda:0":
# where each process sees its own GPU, every rank is on its cuda:0)
_RANK_DEVICE = re.compile(
    r"^\W{0,3}(?:rank\s*)?(?P<rank>\d{1,5})\]?:?\s+(?:is\s+)?(?:(?:running\s+|runs\s+)?on|using|uses|"
    # "rank 0 on cuda:0", "rank 1 -> cuda:0" (review 66)
    r"selected|picked|->|=>)\s+(?:device|gpu|cuda)[\s:#]*(?P<dev>\d{1,3})\b",
    re.IGNORECASE | re.MULTILINE,
)


def rank_lists(text: str) -> dict[str, dict[int, str]]:
    """``{variable: {rank: value}}`` of the lists ranks print (the first value per rank)."""
    out: dict[str, dict[int, str]] = {}
    for m in _first_lines(_RANK_LIST, text):
        var = f"{m.group('var').upper()}_VISIBLE_DEVICES"
        out.setdefault(var, {}).setdefault(int(m.group("rank")), m.group("value").strip(",."))
    return out


def rank_devices(text: str) -> dict[int, int]:
    """``{rank: device}`` the ranks print of themselves (the first line per rank)."""
    out: dict[int, int] = {}
    for m in _first_lines(_RANK_DEVICE, text):
        out.setdefault(int(m.group("rank")), int(m.group("dev")))
    return out


def _first_lines(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """The first :data:`MAX_LINES` matches of ``pattern``: bounded work on a huge log."""
    return islice(pattern.finditer(text), MAX_LINES)


def printed_device_points(devices: dict[int, int]) -> list[tuple[str, float, str]]:
    """Two or more ranks that report the same device: nothing selected a device per rank."""
    if len(devices) < 2 or len(set(devices.values())) != 1:
        return []
    ranks = ", ".join(str(r) for r in sorted(devices)[:6])
    (dev,) = set(devices.values())
    return [
        (
            "no_set_device",
            3.0,
            f"ranks {ranks} each report device {dev}: no device is selected per rank "
            "(reference/pytorch_nccl.md §1)",
        )
    ]


def printed_list_points(lists: dict[str, dict[int, str]]) -> list[tuple[str, float, str]]:
    """(category, points, why) of what two or more ranks' printed lists show."""
    out: list[tuple[str, float, str]] = []
    for var, by_rank in sorted(lists.items()):
        if len(by_rank) < 2 or var == "ROCR_VISIBLE_DEVICES" and "None" in by_rank.values():
            continue
        values = set(by_rank.values())
        singles = all("," not in v and v.lower() not in ("none", "all", "") for v in values)
        ranks = ", ".join(str(r) for r in sorted(by_rank)[:6])
        if singles and len(values) == 1:
            (only,) = values
            out.append(
                (
                    "visible_devices_mismatch",
                    4.0,
                    f"ranks {ranks} all print {var}={only}: one GPU for the whole job, a list "
                    "narrowed before the launch (reference/cuda_devices.md §1)",
                )
            )
        elif singles and len(values) == len(by_rank):
            out.append(
                (
                    "per_process_visible_devices",
                    3.0,
                    f"ranks {ranks} print {var} with a different single GPU each: every process "
                    "sees only its own GPU (reference/launchers.md §5)",
                )
            )
    return out
