"""The order in which pasted code touches CUDA: a CUDA_VISIBLE_DEVICES set in code after a call
that initialised CUDA changes nothing in that process (reference/cuda_devices.md §1: the runtime
reads the variable once, when it initialises). Calls inside a ``def`` or ``class`` body run later,
when called, so they do not count as before the lines that follow them.
"""

from __future__ import annotations

import re

# calls that initialise CUDA in PyTorch (the runtime reads CUDA_VISIBLE_DEVICES then, once:
# reference/cuda_devices.md §1), and code that sets the variable
_CUDA_INIT = re.compile(
    r"torch\.cuda\.(?:is_available|device_count|current_device|set_device|get_device_name|"
    r"init|mem_get_info)\(|\.cuda\(\)|\.to\(\s*['\"]cuda|device\s*=\s*['\"]cuda"
)
_CVD_IN_CODE = re.compile(
    r"os\.environ\[\s*['\"]CUDA_VISIBLE_DEVICES['\"]\s*\]\s*=|"
    r"os\.(?:environ\.setdefault|putenv)\(\s*['\"]CUDA_VISIBLE_DEVICES"
)
_DEFINITION = re.compile(r"\s*(?:async\s+)?(?:def|class)\s")


def cvd_after_cuda(text: str, source: str) -> str:
    """Where code sets CUDA_VISIBLE_DEVICES after a call that initialised CUDA (a notebook cell
    that ran ``torch.cuda.is_available()`` first): the assignment changes nothing in this
    process (review 58)."""
    assign = _CVD_IN_CODE.search(text)
    if assign is None:
        return ""
    lines = text[: assign.start()].split("\n")
    depth = _indent(lines[-1])
    ran = any(
        _CUDA_INIT.search(line) and _indent(line) <= depth and not _in_definition(lines, i)
        for i, line in enumerate(lines[:-1][-400:], start=max(0, len(lines) - 401))
    )
    if not ran:
        return ""
    end = text.find("\n", assign.start())
    said = lines[-1] + text[assign.start() : end if end != -1 else None]
    return f"{source}:{len(lines)}: {said.strip()[:160]}"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _in_definition(lines: list[str], at: int) -> bool:
    """Whether line ``at`` is in the body of a ``def`` or ``class`` (run later, when called:
    not before the lines that follow it)."""
    depth = _indent(lines[at])
    for line in reversed(lines[max(0, at - 200) : at]):
        if line.strip() and _indent(line) < depth:
            if _DEFINITION.match(line):
                return True
            depth = _indent(line)
    return False
