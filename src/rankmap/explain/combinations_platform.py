"""Combinations about the machine's platform (:mod:`rankmap.explain.combinations`): a host
without a CUDA GPU (a CPU-only node, a Mac), PyTorch built without NCCL on Windows or on Linux,
an Ascend NPU stack read in CUDA's terms.
"""

from __future__ import annotations

from rankmap.explain.docfacts import DocFacts
from rankmap.explain.priors import HAND as CLASS_PRIORS
from rankmap.explain.score_model import Scores


def no_gpu_on_the_host(doc: DocFacts | None, s: Scores) -> None:
    """ "No CUDA-capable device" on a host the writer says has no GPU (a CPU-only node): the
    program looked for a GPU where there is none; no list or container hid one (b26 dev)."""
    if doc is None or "cpu-only-host" not in doc.hits:
        return
    for sid in ("no-cuda-device", "lightning-gpu-unavailable"):  # (Lightning: "only has: []")
        if sid in doc.hits:
            s.take_back(sid, "the host has no GPU: nothing hid one from the process")


def nccl_on_windows(doc: DocFacts | None, s: Scores) -> None:
    """ "Distributed package doesn't have NCCL built in" on Windows is the platform, not a version
    to upgrade: PyTorch's Windows wheels carry gloo only (https://pytorch.org/docs/stable/
    distributed.html, Backends). The build message's version points move to ``other``."""
    if not doc or not {"nccl-not-built", "windows-host"} <= set(doc.hits):
        return
    moved = s.signal_points("version_mismatch", "nccl-not-built")
    s.add("version_mismatch", -moved, "on Windows no PyTorch build has NCCL: no version fixes it")
    s.add(
        "other",
        moved + 1.0,
        "NCCL is not built into PyTorch on Windows (its wheels carry gloo only): the job asked for "
        "a backend the platform does not have",
        doc.quoted("windows-host"),
    )
    s.name_fix(
        "other",
        moved + 1.0,
        "Use the gloo backend on Windows (`init_process_group(backend='gloo')`; Lightning: "
        "`DDPStrategy(process_group_backend='gloo')`), or run the job under Linux or WSL2, where "
        "PyTorch ships NCCL",
    )


def nccl_missing_on_linux(doc: DocFacts | None, s: Scores) -> None:
    """ "Distributed package doesn't have NCCL built in" on a Linux machine: PyTorch's CUDA wheels
    for Linux ship NCCL (https://pytorch.org/docs/stable/distributed.html, Backends), so the
    build installed is the problem (a CPU-only or source build): the platform's share of the
    message's points moves to the build."""
    if not doc or "nccl-not-built" not in doc.hits or "linux-host" not in doc.hits:
        return
    if {"windows-host", "cpu-only-host"} & set(doc.hits):
        return  # (a Windows machine or a Mac beside a Linux one: which failed is not told)
    moved = s.signal_points("other", "nccl-not-built")
    s.add("other", -moved, "on Linux PyTorch's CUDA builds have NCCL: the platform is not it")
    s.add(
        "version_mismatch",
        moved + 1.0,  # (as the Windows rule: the platform told decides, one point over the move)
        "NCCL is missing from the PyTorch build on a Linux machine, where the CUDA builds carry "
        "it: a CPU-only or source build was installed",
        doc.quoted("linux-host"),
    )


def npu_stack(doc: DocFacts | None, s: Scores) -> None:
    """An Ascend NPU job (torch_npu, ASCEND_RT_VISIBLE_DEVICES, HCCL) with nothing of CUDA's in
    the input: the CUDA reading of a generic message ("Invalid device id": the failure classes'
    priors, measured on CUDA threads) names causes in CUDA's terms with fixes that do not apply;
    the same rules hold under the NPU stack's own names, so the finding says so (review 73; b28
    dev). A specific fact (a local rank read wrong, Ray's NOSET switch) still counts."""
    if doc is None or "ascend-npu" not in doc.hits:
        return
    if any("nccl" in sid or "cuda" in sid for sid in doc.hits):
        return  # (a CUDA machine beside it: its messages are CUDA's)
    # the failure classes' priors were measured on CUDA threads and a "visible devices" word is
    # CUDA's list here: taken back; a specific fact (a local rank read wrong) holds on NPUs too
    for sid in [*CLASS_PRIORS, "visible-devices-any"]:
        if sid in doc.hits:
            s.take_back(sid, "an Ascend NPU stack: the CUDA reading of this does not apply")
    s.add(
        "other",
        3.0,
        "an Ascend NPU job (torch_npu / HCCL): rankmap's rules are CUDA's and ROCm's; the NPU "
        "stack follows the same ones under its own names",
        doc.quoted("ascend-npu"),
    )
    s.name_fix(
        "other",
        3.0,
        "On Ascend the same mapping rules hold with the NPU's names: ASCEND_RT_VISIBLE_DEVICES "
        "renumbers the listed NPUs from 0 (index within the list), and each process selects its "
        "own with `torch.npu.set_device(local_rank)` before HCCL starts",
    )
