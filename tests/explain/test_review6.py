"""Session 6: states the writer says are wanted are no complaint.

Every sentence is written for these tests.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from paste_findings import alarms_of as _alarms
from paste_findings import findings_of as _explain_all

from rankmap.adapters.local import explain_files
from rankmap.explain.denial import wanted
from rankmap.explain.docread import read_document
from rankmap.findings import Finding, Severity


@pytest.mark.parametrize(
    "sentence",
    [
        "Our pods see all GPUs of the node, which is what we want.",
        "Each container sees all 8 GPUs, as intended for the profiler.",
        "Every pod lists all GPUs of the node, that is expected here.",
    ],
)
def test_a_wanted_state_is_no_alarm(sentence: str) -> None:
    assert "nvd-ignored" not in read_document(sentence + "\n").hits
    assert not _alarms(sentence + "\n")


@pytest.mark.parametrize(
    ("report", "sid"),
    [
        ("Our pods see all GPUs of the node, which breaks the job.", "nvd-ignored"),
        ("Each container sees all 8 GPUs, that is not what we want.", "nvd-ignored"),
    ],
)
def test_the_same_state_as_a_complaint_is_still_read(report: str, sid: str) -> None:
    assert sid in read_document(report + "\n").hits


def test_wanted_reads_only_the_rest_of_the_sentence() -> None:
    text = "All GPUs are visible in the pod. That is what we want for the other job."
    end = text.index(" in the pod") + len(" in the pod")
    assert not wanted(text, end)
    assert wanted("All GPUs are visible, which is fine.", len("All GPUs are visible"))


_BARE = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1691, invalid usage (run with NCCL_DEBUG=WARN for details), "
    "NCCL version 2.19.3\n"
    "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
)


def _first(text: str) -> Finding:
    return explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()[0]


def test_a_bare_invalid_usage_is_a_probable_shared_gpu_not_an_error() -> None:
    first = _first(_BARE)
    assert first.category in {"oversubscribed", "no_set_device"} or first.code == "RM103"
    assert first.severity is Severity.WARNING
    assert first.title.startswith("Probably: ")
    assert "NCCL_DEBUG=WARN" in first.detail


def test_the_duplicate_gpu_line_makes_it_an_error() -> None:
    text = (
        _BARE + "Last error:\nDuplicate GPU detected : rank 0 and rank 1 both on CUDA device 2000\n"
    )
    first = _first(text)
    assert first.severity is Severity.ERROR
    assert not first.title.startswith("Probably")
    assert first.ranks == (0, 1)


_LIGHTNING = (
    "pytorch_lightning.utilities.exceptions.MisconfigurationException: You requested gpu: [1]\n"
    " But your machine only has: [0]\n"
)


def test_lightning_one_visible_gpu_without_a_scheduler_is_no_per_task_error() -> None:
    findings = explain_files([Path("-")], stdin=io.StringIO(_LIGHTNING)).ordered_findings()
    assert all(f.severity is not Severity.ERROR for f in findings)
    rm501 = next(f for f in findings if f.code == "RM501")
    assert "CUDA_VISIBLE_DEVICES" in rm501.detail


def test_lightning_one_visible_gpu_under_gpus_per_task_is_the_per_task_binding() -> None:
    first = _first("srun --gpus-per-task=1 python train.py\n" + _LIGHTNING)
    assert (first.code, first.severity) == ("RM501", Severity.ERROR)


def _hits(text: str) -> set[str]:
    return set(read_document(text).hits)


def test_deepspeed_options_count_on_a_deepspeed_line_only() -> None:
    mpi = "```\nmpirun --hostfile hosts -np 16 ./all_reduce_perf -b 8 -e 1G\n```\n"
    ds = "```\ndeepspeed --hostfile hosts --include worker-1:0,1 train.py\n```\n"
    assert "deepspeed-include" not in _hits(mpi)
    assert "deepspeed-include" in _hits(ds)


def test_a_host_network_is_a_setting_not_two_hosts_with_one_name() -> None:
    setting = "I run the workers with docker on the host network.\n"
    same = "Both nodes have the same hostname after cloning the image.\n"
    assert "same-hostname" not in _hits(setting)
    assert "host-network" in _hits(setting)
    assert "same-hostname" in _hits(same)


def _points(text: str) -> dict[str, float]:
    from rankmap.explain.context import Context
    from rankmap.explain.scoring import score_all

    return dict(score_all([], Context(), read_document(text)).points)


def test_an_ignored_visible_devices_list_leaves_the_cause_to_the_context() -> None:
    alone = _points("CUDA_VISIBLE_DEVICES is ignored by the job.\n")
    assert alone["visible_devices_mismatch"] > alone["launcher_config"] > 0
    assert alone["per_process_visible_devices"] > 0
    under_ds = _points(
        "CUDA_VISIBLE_DEVICES is ignored by the job.\n```\ndeepspeed --num_gpus 2 train.py\n```\n"
    )
    assert under_ds["launcher_config"] > under_ds["visible_devices_mismatch"]


def test_a_rocm_visible_devices_name_weighs_like_the_cuda_name() -> None:
    hip = _points("We set HIP_VISIBLE_DEVICES for the workers.\n")
    cvd = _points("We set CUDA_VISIBLE_DEVICES for the workers.\n")
    assert hip["visible_devices_mismatch"] == cvd["visible_devices_mismatch"]


def test_a_markdown_heading_is_prose_not_a_root_prompt() -> None:
    from rankmap.explain.document import split_document

    kinds = [
        s.kind
        for s in split_document(
            "# Multi-node job only uses one GPU per node\n\n"
            "## Describe the bug\n\n"
            "# torchrun --nproc_per_node 4 train.py\n"
        )
    ]
    assert kinds == ["prose", "shell"]


def test_a_title_is_read_like_the_reporters_sentences() -> None:
    # prose-only signals: they were never tried on a title read as a shell line
    shared = read_document("# All four processes share one GPU\n\nSee below.\n").hits
    assert shared["procs-share-a-gpu"].segment == "prose"
    chosen = read_document("# The wrong GPU is selected for each worker\n\nSee below.\n").hits
    assert chosen["device-selection-problem"].segment == "prose"


def test_what_the_title_names_weighs_double() -> None:
    from rankmap.explain.scoring import TITLE_WEIGHT

    body = _points("Some text first.\n\nAll four processes share one GPU.\n")
    title = _points("# All four processes share one GPU\n\nSome text.\n")
    assert body and title
    for cat, pts in body.items():
        assert title[cat] == pytest.approx(pts * TITLE_WEIGHT)


@pytest.mark.parametrize(
    "text",
    [
        "(RayTrainWorker pid=4711) RuntimeError: CUDA error: invalid device ordinal\n",
        "We call ray.get_gpu_ids() in the worker and pass it to set_device.\n",
        "```python\ntrainer = TorchTrainer(train_loop, scaling_config=cfg)\n```\n",
    ],
)
def test_ray_trains_own_spellings_are_ray(text: str) -> None:
    assert "ray" in _hits(text)


def test_an_invalid_device_in_another_stacks_wording_inside_ray_workers() -> None:
    # the failure class (any stack's wording), not the PyTorch ordinal finding
    text = (
        "(RayTrainWorker pid=4711) jax.errors.JaxRuntimeError: INVALID_ARGUMENT: "
        "CUDA_ERROR_INVALID_DEVICE: invalid device ordinal\n"
    )
    doc = read_document(text)
    assert "invalid-device-any" in doc.hits
    from rankmap.explain.combinations import from_combinations
    from rankmap.explain.context import Context
    from rankmap.explain.score_model import Scores

    s = Scores()
    from_combinations(Context(), doc, s, [])
    assert s.points["per_process_visible_devices"] > 0


@pytest.mark.parametrize(
    "text",
    [
        "# MPI connection issue inside docker\n\nThe ssh connection fails after the first "
        "handshake because iptables masquerades the container network.\n",
        "Our workers run in docker; the TCP connection problems started when port 29500 was "
        "blocked by the new firewall rules.\n",
    ],
)
def test_a_connection_problem_in_words_is_no_mapping_alarm(text: str) -> None:
    assert "outside-network-words" in _hits(text)
    assert not _alarms(text)


def test_a_mapping_failure_next_to_a_connection_word_is_still_read() -> None:
    text = (
        "NCCL fails on one node although the connection between hosts is fine:\n"
        "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1b000\n"
    )
    assert "outside-network-words" not in _hits(text)
    first = _first(text)
    assert (first.severity, first.ranks) == (Severity.ERROR, (0, 1))


@pytest.mark.parametrize(
    "text",
    [
        "Copying a tensor from one GPU to another gives all zeros on this server.\n",
        "Peer transfers were corrupted until we turned IOMMU off in the BIOS.\n",
    ],
)
def test_a_broken_path_between_gpus_is_no_mapping_cause(text: str) -> None:
    assert "p2p-path-broken" in _hits(text)
    assert not _alarms(text)


def test_inline_code_in_a_sentence_is_read_as_code() -> None:
    text = (
        "Intro.\nThe bundle sets `device = torch.device(f'cuda:{dist.get_rank()}')` everywhere.\n"
    )
    hit = read_document(text).hits["rank-as-device-code"]
    assert (hit.segment, hit.where) == ("code", "<stdin>:2")


def test_a_bare_rank_is_the_spawn_index_and_weighs_less_than_the_job_wide_rank() -> None:
    bare = _hits("```python\ntorch.cuda.set_device(rank)\n```\n")
    job_wide = _hits("```python\ntorch.cuda.set_device(dist.get_rank())\n```\n")
    assert "bare-rank-as-device" in bare and "rank-as-device-code" not in bare
    assert "rank-as-device-code" in job_wide
    weak = _points("```python\ntorch.cuda.set_device(rank)\n```\n")["global_rank_as_device"]
    strong = _points("```python\ntorch.cuda.set_device(dist.get_rank())\n```\n")
    assert weak < strong["global_rank_as_device"]


@pytest.mark.parametrize(
    ("line", "sid"),
    [
        (
            "ImportError: /opt/venv/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
            "undefined-gpu-symbol",
        ),
        (
            "RuntimeError: Unexpected error from cudaGetDeviceCount(). Error 803: system has "
            "unsupported display driver / cuda driver combination",
            "driver-too-old",
        ),
    ],
)
def test_library_and_driver_mismatches_are_version_mismatches(line: str, sid: str) -> None:
    assert sid in _hits(line + "\n")
    assert _first(line + "\n").category == "version_mismatch"


def test_an_undefined_symbol_of_another_library_is_no_version_mismatch() -> None:
    assert "undefined-gpu-symbol" not in _hits("ImportError: undefined symbol: PyFoo_Bar\n")


def test_a_host_id_that_is_not_unique_is_host_identity_context() -> None:
    assert "hostname-resolution" in _hits("gethostid() returns the same value on two nodes.\n")


def test_ntasks_per_gpu_is_per_task_binding() -> None:
    assert "gpus-per-task" in _hits("```\nsbatch --gpus 2 --ntasks-per-gpu=1 job.sh\n```\n")


@pytest.mark.parametrize(
    ("text", "sid"),
    [
        ("# Fix misuse of global rank when the process group is set up\n", "rank-not-local"),
        (
            "WORLD_SIZE counts every GPU while nproc_per_node should be set to the number of "
            "GPUs per node.\n",
            "more-procs-than-gpus",
        ),
        ("This fixes the NVML vs PyTorch indexing of the visible devices.\n", "nvml-vs-cuda-index"),
    ],
)
def test_fresh_wordings_of_known_causes(text: str, sid: str) -> None:
    assert sid in _hits(text)


def test_nvml_named_alone_is_no_index_mismatch() -> None:
    assert "nvml-vs-cuda-index" not in _hits("We read power draw with NVML every second.\n")


def test_an_undefined_config_attribute_is_a_newer_header_on_an_older_nccl() -> None:
    text = (
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:219, invalid argument, "
        "NCCL version 2.14.3\nncclInvalidArgument: Invalid value for an argument.\nLast error:\n"
        "Invalid config blocking attribute value -2147483648\n"
    )
    assert "nccl-config-undef" in _hits(text)
    assert _first(text).category == "version_mismatch"


def test_more_ranks_placed_on_a_node_than_gpus() -> None:
    text = "It fails when more MPI ranks are placed on a node than GPU devices.\n"
    assert "more-procs-than-gpus" in _hits(text)


def test_the_before_import_rule_is_advice_not_a_failure() -> None:
    text = "# Tip\n\nSet CUDA_VISIBLE_DEVICES before importing torch in your launcher script.\n"
    hits = _hits(text)
    assert "cvd-before-import" in hits and "cvd-after-init" not in hits
    assert all(f.severity is not Severity.ERROR for f in _explain_all(text))


_DS_LOG = (
    "[2023-04-15 22:25:47,206] [INFO] [runner.py:540:main] cmd = python -u -m "
    "deepspeed.launcher.launch --world_info=e30= --master_addr=127.0.0.1 train.py\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)
_CVD_IGNORED = "CUDA_VISIBLE_DEVICES is set and the DeepSpeed launcher"


def _details(launch: str) -> str:
    report = explain_files([Path("-")], stdin=io.StringIO(_DS_LOG), launch=launch)
    return " ".join(f.detail for f in report.ordered_findings())


def test_the_visible_list_deepspeed_derives_from_include_is_not_the_users() -> None:
    assert _CVD_IGNORED not in _details("deepspeed --include localhost:3,5 train.py")
    assert _CVD_IGNORED in _details("CUDA_VISIBLE_DEVICES=3,5 deepspeed --num_gpus 2 train.py")


@pytest.mark.parametrize(
    ("text", "sid"),
    [
        ("# Fix how worker processes are allocated to GPUs\n", "device-selection-problem"),
        ("NCCL fails when hosts with the same prefix join the job.\n", "same-hostname"),
        ("# Use the full hostname instead of just the prefix\n", "same-hostname"),
        (
            "This adds the node_rank argument to the torchrun command of each node.\n",
            "node-rank-unset",
        ),
        ("--node-rank is only used with the static rendezvous backend.\n", "node-rank-unset"),
    ],
)
def test_b10_dev_wordings(text: str, sid: str) -> None:
    assert sid in _hits(text)


def test_a_node_rank_named_alone_is_no_node_rank_problem() -> None:
    assert "node-rank-unset" not in _hits(
        "We launch with torchrun --node_rank 1 on the second node.\n"
    )
