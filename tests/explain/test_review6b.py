"""Review 6b: false alarms and regressions of session 6's explain changes.

Every paste below is written for these tests (no reporter's text).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from paste_findings import alarms_of as _alarms

from rankmap.adapters.local import explain_files
from rankmap.findings import Severity


@pytest.mark.parametrize(
    "text",
    [
        "# Training loss spikes after epoch 3 with CUDA_VISIBLE_DEVICES=0,1\n\n"
        "Both GPUs are busy and the run is fine otherwise; the loss jumps at epoch 3.\n",
        "# Throughput drops after upgrading, HIP_VISIBLE_DEVICES=0,1\n\n"
        "The problem is only speed: 20% fewer samples per second than last month.\n",
    ],
)
def test_a_title_naming_context_is_no_failure(text: str) -> None:
    # the title ranks the causes of a failure the paste shows; it shows none here
    assert not _alarms(text)


def test_a_title_still_weighs_double_next_to_a_failure() -> None:
    from rankmap.explain.context import Context
    from rankmap.explain.docread import read_document
    from rankmap.explain.scoring import score_all

    tail = "\nRuntimeError: CUDA error: invalid device ordinal\n"
    title = read_document("# We set CUDA_VISIBLE_DEVICES=2,3 for the job\n" + tail)
    body = read_document("Intro.\n\nWe set CUDA_VISIBLE_DEVICES=2,3 for the job.\n" + tail)
    t = score_all([], Context(), title).points["visible_devices_mismatch"]
    b = score_all([], Context(), body).points["visible_devices_mismatch"]
    assert t > b


def test_prose_signals_read_a_bounded_share_of_prose_cut_into_many_segments() -> None:
    from rankmap.explain.docread import PROSE_SIGNAL_LIMIT, read_document
    from rankmap.explain.document import split_document

    report = "The GPU ids my trainer prints do not match what nvidia-smi shows.\n"
    # prose paragraphs between code lines: many short prose segments, none near 64 KiB
    filler = "Some words about the weather and the dataset today.\n\nx = 1\n\n" * 6000
    kinds = [s.kind for s in split_document(filler)]
    assert kinds.count("prose") > 100
    assert len(filler) > 2 * PROSE_SIGNAL_LIMIT
    assert "device-selection-problem" in read_document(report + filler).hits
    assert "device-selection-problem" not in read_document(filler + report).hits


def test_megabytes_of_prose_with_inline_code_take_bounded_time() -> None:
    import random
    import time

    words = "the job runs fine on every node and each rank uses its own GPU with local rank"
    pick = random.Random(1).choice
    lines = [
        " ".join(pick(words.split()) for _ in range(20))
        + f" `torch.cuda.set_device(local_rank)` and `x{i} = y.to(rank)` then `cuda:{{rank}}`.\n"
        for i in range(14_000)
    ]
    text = "".join(lines)
    assert len(text) > 2_000_000
    t0 = time.perf_counter()
    _alarms(text)
    assert time.perf_counter() - t0 < 15  # was about 25 s (prose signals per short segment)


@pytest.mark.parametrize(
    ("report", "sid"),
    [
        ("Our pods see all GPUs of the node, not as intended.", "nvd-ignored"),
        ("All four processes share one GPU, not one GPU each as expected.", "procs-share-a-gpu"),
        ("All four processes share one GPU, which is what we want to avoid.", "procs-share-a-gpu"),
        ("All four processes share one GPU, which was expected to fail.", "procs-share-a-gpu"),
        ("All four processes share one GPU, as it should not.", "procs-share-a-gpu"),
        (
            "All four processes share one GPU, and the GPUs are not assigned as expected.",
            "procs-share-a-gpu",
        ),
        (
            "Our pods see all GPUs of the node instead of one each as intended by the plugin.",
            "nvd-ignored",
        ),
    ],
)
def test_a_denied_or_avoided_wanted_phrase_is_still_a_complaint(report: str, sid: str) -> None:
    from rankmap.explain.docread import read_document

    assert sid in read_document(report + "\n").hits


@pytest.mark.parametrize(
    "sentence",
    [
        "All four processes share one GPU, which is fine for this smoke test.",
        "Each container sees all 8 GPUs, just as intended.",
    ],
)
def test_a_wanted_state_without_denial_stays_no_complaint(sentence: str) -> None:
    from rankmap.explain.docread import read_document

    hits = read_document(sentence + "\n").hits
    assert "procs-share-a-gpu" not in hits and "nvd-ignored" not in hits


@pytest.mark.parametrize(
    "text",
    [
        '# Tip for new users\n\nA common mistake is `device = torch.device(f"cuda:{dist.get_rank()}")`.'
        " Our template does the right thing, nothing to fix.\n",
        "# Docs note\n\nNever write `torch.cuda.set_device(dist.get_rank())` in a multi-node job; "
        "the tutorial now says so.\n",
        "Use `LOCAL_RANK` instead of `torch.cuda.set_device(dist.get_rank())`, the docs fix says.\n",
        "`torch.cuda.set_device(dist.get_rank())` is a classic anti-pattern; our code avoids it.\n",
    ],
)
def test_inline_code_the_sentence_warns_against_is_not_read_as_run(text: str) -> None:
    from rankmap.explain.docread import read_document

    assert "rank-as-device-code" not in read_document(text).hits
    assert not [f for f in _alarms(text) if f.severity is Severity.ERROR]


def test_inline_code_the_writer_runs_is_still_read() -> None:
    from rankmap.explain.docread import read_document

    text = "Each rank calls `torch.cuda.set_device(dist.get_rank())` and the second node fails.\n"
    assert "rank-as-device-code" in read_document(text).hits


def test_a_comment_in_a_fence_at_the_top_is_no_title() -> None:
    from rankmap.explain.docread import read_document

    text = (
        "```bash\n# CUDA_VISIBLE_DEVICES=0,1 comes from the scheduler here\nsrun python x.py\n```\n"
    )
    assert read_document(text).title_line is None
    assert read_document("# The title\n\n```bash\n# a comment\n```\n").title_line == 1


_INIT = (
    "node1:100:100 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 "
    "commId 0xab - Init COMPLETE\n"
    "node1:101:101 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 "
    "commId 0xab - Init COMPLETE\n"
)
_INVALID_USAGE = (
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1691, invalid usage "
    "(run with NCCL_DEBUG=WARN for details), NCCL version 2.19.3\n"
    "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
)


def test_invalid_usage_after_each_rank_initialised_on_its_own_gpu_is_no_shared_gpu() -> None:
    assert not _alarms(_INIT + _INVALID_USAGE)


def test_invalid_usage_with_two_ranks_on_one_bus_id_is_still_a_shared_gpu() -> None:
    shared = _INIT.replace("busId 2a000", "busId 18000")
    assert any(
        f.category in {"oversubscribed", "no_set_device"} for f in _alarms(shared + _INVALID_USAGE)
    )


def test_garbage_collection_is_no_broken_gpu_path() -> None:
    from rankmap.explain.docread import read_document

    text = "Python garbage collection pauses every 30 s on the GPU nodes; gc.freeze() fixed it.\n"
    assert "p2p-path-broken" not in read_document(text).hits
    broken = "The tensor arrives as garbage on the other GPU after the copy.\n"
    assert "p2p-path-broken" in read_document(broken).hits


def test_lightnings_visible_list_is_read_whatever_the_case_of_but() -> None:
    text = (
        "# Lightning: You requested gpu: [0, 1] but your machine only has: [0]\n\nOn my laptop.\n"
    )
    findings = explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()
    assert all(f.severity is not Severity.ERROR for f in findings)  # 'sees []' had been an error
    assert any(f.code == "RM501" and "sees [0]" in f.title for f in findings)


@pytest.mark.parametrize(
    "text",
    [
        "# Speed up data loading\n\nThis PR fixes the slow input pipeline: it moves `batch.to(rank)`"
        " before the loop. Single node, 4 GPUs, mp.spawn.\n",
        "# Memory leak in eval loop\n\nMemory grows each epoch. The eval loop keeps `outputs.to(rank)`"
        " tensors in a list. Fixed by detaching them.\n",
        "# DDP example: `DDP(model, device_ids=[rank])` works on one node\n\nWorks fine. The problem "
        "I had was my own typo elsewhere.\n",
    ],
)
def test_a_bare_rank_alone_is_no_cause_without_a_failure_of_the_family(text: str) -> None:
    # mp.spawn's index is the local rank on one node: ambiguous, below the context-alone gate
    assert not _alarms(text)


@pytest.mark.parametrize(
    ("text", "hit"),
    [
        ("Inside the worker we call ray.get_gpu_ids() to log the GPUs.\n", False),
        ("```yaml\ngpu_ids: all\nnum_processes: 4\n```\n", True),
    ],
)
def test_accelerates_config_keys_are_not_read_inside_other_names(text: str, hit: bool) -> None:
    from rankmap.explain.docread import read_document

    assert ("accelerate-config" in read_document(text).hits) is hit


@pytest.mark.parametrize(
    ("text", "failure"),
    [
        ("# IOMMU passthrough question\n\nIs iommu=pt recommended? Nothing to report.\n", False),
        ("Our VM boots with intel_iommu=on in the kernel line.\n", False),
        ("Peer copies were corrupted until we turned IOMMU off in the BIOS.\n", True),
        ("ACS is enabled on the PCIe switch and the first all_reduce hangs.\n", True),
    ],
)
def test_a_pcie_setting_named_alone_is_context_not_a_failure(text: str, failure: bool) -> None:
    from rankmap.explain.docread import read_document

    hits = read_document(text).hits
    assert ("p2p-path-broken" in hits) is failure
    first = explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()
    assert not failure or first
    assert failure or all(f.severity is not Severity.ERROR for f in first)


@pytest.mark.parametrize(
    "text",
    [
        "# Wrong GPU selected by each worker\n\nWe first suspected network connection problems, but "
        "the workers simply pick the wrong GPU: worker 1 uses GPU 0.\n",
        "# Wrong GPU selected by each worker\n\nThe port 29500 is blocked on the other cluster, but "
        "that is unrelated: here every worker picks the wrong GPU.\n",
    ],
)
def test_a_network_problem_the_writer_rules_out_is_no_outside_failure(text: str) -> None:
    from rankmap.explain.docread import read_document

    assert "outside-network-words" not in read_document(text).hits
    assert _alarms(text)  # the device-selection report gets its guess again


def test_a_network_problem_in_the_writers_words_is_still_outside() -> None:
    from rankmap.explain.docread import read_document

    text = "Our ssh connections drop every few hours; the switch firmware update fixed it.\n"
    assert "outside-network-words" in read_document(text).hits


def test_a_but_that_narrows_the_network_problem_does_not_rule_it_out() -> None:
    from rankmap.explain.docread import read_document

    text = "The MPI connection fails but only on node 3, after about an hour.\n"
    assert "outside-network-words" in read_document(text).hits
