"""A question about CUDA's renumbering: the writer set a visible-devices list of GPUs that are not
the first ones (``CUDA_VISIBLE_DEVICES=5,6``, accelerate's ``gpu_ids: 3,4,5,7``), then sees the
processes name ``cuda:0``, ``cuda:1`` (TensorFlow's ``GPU:0``) and asks why the list "does not
work". Inside a process the listed GPUs are numbered from 0 (reference/cuda_devices.md §1), so
those are the listed GPUs: with no failure printed, nothing is wrong (b25 dev: two such threads
were answered exactly so; review 69)."""

from __future__ import annotations

import re

from rankmap.explain.docfacts import DocFacts
from rankmap.explain.visible_lists import writers_list

# the process's own numbering: PyTorch's cuda:N, TensorFlow's GPU:N / /device:GPU:N
_OWN_INDEX = re.compile(r"\bcuda:(\d{1,2})\b|\bGPU:(\d{1,2})\b", re.IGNORECASE)
_TEXT_LIMIT = 200_000
# what the writer reports beside the indices: ranks on one GPU, a hang — a failure, not a question
# about numbering (review of session 18's change)
_SYMPTOMS = frozenset({
    "all-on-gpu0", "same-gpu", "procs-share-a-gpu", "duplicate-gpu-words", "procs-on-every-gpu",
    "hang-first-collective", "collective-timeout",
})  # fmt: skip
# a line the job printed that tells a failure (a question with no failure printed is asked of a
# run that worked)
_FAILURE_LINE = re.compile(
    r"Traceback|Error\b|\bERROR\b|\berror:|Exception\b|\bFAILED\b|NCCL WARN|Segmentation fault|"
    r"[Ww]atchdog|timed out|[Tt]imeout|"
    r"\bKilled\b|core dumped|Aborted"
)


def _listed(doc: DocFacts) -> list[str]:
    """The list the writer set: CUDA_VISIBLE_DEVICES (set, or said to be set), else
    accelerate's gpu_ids (exported as CUDA_VISIBLE_DEVICES, reference/launchers.md §3)."""
    entries = writers_list(doc)
    if not entries:
        ids = doc.configs.accelerate.get("gpu_ids", "")
        entries = [e.strip() for e in ids.split(",") if e.strip()]
    return entries if all(e.isdecimal() for e in entries) else []


def renumbered_view(doc: DocFacts, text: str) -> str | None:
    """Why the device indices the text names are the listed GPUs renumbered, or None: a list of
    two or more GPUs that is not ``0..n-1``, and two or more indices named in the process's own
    numbering, all below the list's length and not all of them listed GPU ids."""
    listed = _listed(doc)
    n = len(listed)
    # (the checks on what was read first: the text is scanned only for a list of later GPUs)
    if n < 2 or listed == [str(i) for i in range(n)] or _SYMPTOMS & set(doc.hits):
        return None
    if _failure_printed(doc, text):
        return None
    named = {int(a or b) for a, b in _OWN_INDEX.findall(text[:_TEXT_LIMIT])}
    if len(named) < 2 or max(named) >= n or named <= {int(e) for e in listed}:
        return None
    shown = ", ".join(f"cuda:{i}" for i in sorted(named))
    return (
        f"the input names {shown} of a list of GPUs {','.join(listed)}: inside a process the "
        "listed GPUs are numbered from 0, so those are the listed GPUs "
        "(reference/cuda_devices.md §1)"
    )


def _failure_printed(doc: DocFacts, text: str) -> bool:
    """Whether a line outside the writer's prose tells a failure."""
    return any(
        _FAILURE_LINE.search(line) and not doc.in_prose(n)
        for n, line in enumerate(text[:_TEXT_LIMIT].splitlines(), 1)
    )
