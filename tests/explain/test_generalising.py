"""Generalising round 4: one vocabulary for the prose symptoms, log prefixes before line-anchored
classes, and the weakest failure class.

Every line below is a shape written for these tests (no reporter's text).
"""

from __future__ import annotations

import pytest

from rankmap.explain.catalogue import SIGNALS
from rankmap.explain.docread import _search

BY_ID = {s.id: s for s in SIGNALS}


def _hit(sid: str, line: str) -> bool:
    text = "noise\n" * 5 + line + "\n" + "noise\n" * 5
    return _search(BY_ID[sid], text, text.lower()) is not None


@pytest.mark.parametrize(
    ("sid", "line"),
    [
        ("same-gpu", "all processes on the node used the same GPU"),
        ("same-gpu", "both engines were placed on the same device"),
        ("same-gpu", "the 4 tasks shared the same card"),
        ("same-gpu", "several actors are running on the same GPU"),
        ("all-on-gpu0", "all 4 tasks were running on GPU 0"),
        ("all-on-gpu0", "each of the workers selected device 0"),
        ("all-on-gpu0", "every rank ended up on cuda:0"),
        ("all-on-gpu0", "both replicas landed on GPU-0"),
    ],
)
def test_every_inflection_and_every_name_of_a_process_reads_alike(sid: str, line: str) -> None:
    assert _hit(sid, line), (sid, line)


@pytest.mark.parametrize(
    ("sid", "line"),
    [
        ("same-gpu", "every process uses its own GPU"),
        ("same-gpu", "each task sees a different device"),
        ("all-on-gpu0", "each process uses GPU 0 and GPU 1"),
        ("all-on-gpu0", "all 4 tasks were running on GPU 0-3"),
    ],
)
def test_what_is_no_shared_gpu_stays_unmatched(sid: str, line: str) -> None:
    assert not _hit(sid, line), (sid, line)


@pytest.mark.parametrize(
    "prefix",
    [
        "",
        "[rank3]: ",
        "[default0]:",
        "[1,3]<stderr>: ",
        "(RayWorkerWrapper pid=12, ip=10.0.0.2) ERROR 06-11 19:21:45 [worker.py:62] ",
        "3: ",
        "node-07: ",
    ],
)
def test_line_anchored_classes_read_past_launcher_and_logger_prefixes(prefix: str) -> None:
    frame = '  File "/venv/torch/cuda/__init__.py", line 399, in set_device'
    assert _hit("init-traceback", prefix + frame), prefix
    assert _hit("exception-any", prefix + "RuntimeError: worker setup failed"), prefix
    assert _hit("exception-any", prefix + "Traceback (most recent call last):"), prefix
    assert _hit("outside-python", prefix + "ModuleNotFoundError: No module named 'apex'"), prefix


def test_a_frame_outside_set_up_is_still_no_set_up_traceback() -> None:
    assert not _hit("init-traceback", '[rank3]:   File "train.py", line 12, in forward')
    assert not _hit("exception-any", "[rank3]: the error rate is low")


def test_a_bare_nccl_internal_error_is_no_shared_gpu() -> None:
    import io
    from pathlib import Path

    from rankmap.adapters.local import explain_files
    from rankmap.findings import Severity

    text = "ncclInternalError: Internal check failed. Proxy Call to rank 0 failed (Connect)\n"
    fs = explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()
    assert all(f.code != "RM103" for f in fs)
    assert not [f for f in fs if f.category != "other" and f.severity is Severity.ERROR]
    # the code NCCL's duplicate check returns still is (reference/nccl.md (a))
    usage = (
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, invalid usage, NCCL version 2.18.1\n"
    )
    fs = explain_files([Path("-")], stdin=io.StringIO(usage)).ordered_findings()
    assert fs[0].code == "RM103"


@pytest.mark.parametrize(
    ("sid", "line"),
    [
        (
            "device-placement",
            "RuntimeError: Expected all tensors to be on the same device, but found at least two "
            "devices, cuda:1 and cuda:0!",
        ),
        (
            "device-placement",
            "RuntimeError: module must have its parameters and buffers on device cuda:0 "
            "(device_ids[0]) but found one of them on device: cuda:2",
        ),
        (
            "device-placement",
            "ValueError: DistributedDataParallel device_ids and output_device arguments only work "
            "with single-device/multiple-device GPU modules or CPU modules, but got device_ids "
            "[1], output_device 1, and module parameters {device(type='cuda', index=0)}.",
        ),
        (
            "no-kernel-image",
            "I gpu_device.cc:1700] Ignoring visible gpu device (device: 0, name: Tesla K10, pci bus "
            "id: 0000:05:00.0, compute capability: 3.0) with Cuda compute capability 3.0. The "
            "minimum required Cuda capability is 3.5.",
        ),
        (
            "no-kernel-image",
            "Found GPU0 Tesla K40c which is of cuda capability 3.5. PyTorch no longer supports "
            "this GPU because it is too old.",
        ),
    ],
)
def test_placement_and_architecture_messages_are_recognised(sid: str, line: str) -> None:
    assert _hit(sid, line), (sid, line)


def test_tensors_on_two_devices_are_no_shared_gpu() -> None:
    line = "RuntimeError: Expected all tensors to be on the same device, but found at least two"
    assert not _hit("same-gpu", line)
    assert not _hit(
        "device-placement", "Expected all tensors to be on the same device, cpu and cuda:0"
    )


def test_one_gpu_visible_to_each_worker_is_the_design_not_a_count_failure() -> None:
    assert not _hit("device-count-message", "so only one GPU is visible to each worker, right?")
    assert _hit("device-count-message", "RuntimeError: only 2 GPUs are visible")
    assert _hit("device-count-message", "but only 1 GPU is available to the process group")


def test_a_framework_named_is_context_not_a_cause() -> None:
    # the catalogue's scale: 1-2 for context that makes a category plausible
    assert max(w for _, w in BY_ID["dask-cuda"].supports) <= 2
