"""explain v2: versions named in a paste and the configs pasted with it (shapes written here)."""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from text_strategies import joined_fragments

from rankmap.adapters.local import explain_files
from rankmap.explain.configs import ConfigFacts, config_points, read_parsed, read_text
from rankmap.explain.docread import read_document
from rankmap.explain.versions import _NCCL, _nccl_matches, conflicts, versions_in

FENCE = "`" * 3


def _first_category(text: str) -> str:
    report = explain_files([Path("-")], stdin=io.StringIO(text))
    return report.ordered_findings()[0].category


def test_versions_of_every_kind_are_read() -> None:
    v = versions_in(
        "| NVIDIA-SMI 470.82.01    Driver Version: 470.82.01    CUDA Version: 11.4 |\n"
        "PyTorch version: 2.1.0+cu121\nnode1: NCCL version 2.18.1+cuda12.1\n"
        "node2: NCCL version 2.14.3+cuda11.7\n"
    )
    assert v.driver == ["470.82.01"]
    assert v.driver_cuda == ["11.4"]
    assert v.built_cuda == ["12.1"]
    assert v.nccl == ["2.18.1", "2.14.3"]
    reasons = " ".join(why for _, why in conflicts(v))
    assert "newer than the CUDA 11.4" in reasons and "two NCCL versions" in reasons


def test_two_nodes_listing_different_pytorch_and_nccl_wheels_conflict() -> None:
    v = versions_in(
        "node-a\nPyTorch version: 2.1.2+cu121\n[pip3] nvidia-nccl-cu12==2.18.1\n"
        "node-b\nPyTorch version: 2.3.0+cu121\n[pip3] nvidia-nccl-cu12==2.20.5\n"
    )
    assert v.torch == ["2.1.2", "2.3.0"]
    assert v.nccl == ["2.18.1", "2.20.5"]
    reasons = " ".join(why for _, why in conflicts(v))
    assert "two PyTorch versions" in reasons and "two NCCL versions" in reasons
    hang = (
        "# init_process_group hangs across our two nodes\n\nThe job hangs at "
        "init_process_group.\n\n"
        f"{FENCE}\nPyTorch version: 2.1.2+cu121\n[pip3] nvidia-nccl-cu12==2.18.1\n{FENCE}\n\n"
        f"{FENCE}\nPyTorch version: 2.3.0+cu121\n[pip3] nvidia-nccl-cu12==2.20.5\n{FENCE}\n"
    )
    assert _first_category(hang) == "version_mismatch"


def test_one_consistent_stack_is_no_conflict() -> None:
    v = versions_in("Driver Version: 535.104.05   CUDA Version: 12.2\ntorch 2.1.0+cu118\n")
    assert conflicts(v) == []


def test_a_runtime_newer_than_the_driver_decides_a_vague_failure() -> None:
    text = (
        "Training fails on the new node\n\n"
        f"{FENCE}\nRuntimeError: CUDA error: unknown error\n{FENCE}\n"
        "Driver Version: 450.80.02   CUDA Version: 11.0\nPyTorch version: 2.0.1+cu118\n"
    )
    assert _first_category(text) == "version_mismatch"


def test_accelerate_config_with_more_processes_than_gpu_ids() -> None:
    facts = ConfigFacts()
    read_parsed({"distributed_type": "MULTI_GPU", "num_processes": 8, "gpu_ids": "0,1,2,3"}, facts)
    cats = [c for c, _, _ in config_points(facts, None, None)]
    assert cats == ["oversubscribed"]


def test_accelerate_env_lines_are_read_from_any_segment() -> None:
    facts = ConfigFacts()
    read_text(
        "- `Accelerate` default config:\n\t- distributed_type: MULTI_GPU\n\t- num_processes: 1\n",
        facts,
    )
    assert facts.accelerate == {"distributed_type": "MULTI_GPU", "num_processes": "1"}
    assert [c for c, _, _ in config_points(facts, None, None)] == ["launcher_config"]


POD = f"""Pods see the wrong GPUs

{FENCE}yaml
apiVersion: v1
kind: Pod
spec:
  containers:
  - name: trainer
    env:
    - name: NVIDIA_VISIBLE_DEVICES
      value: "0,1"
    resources:
      limits:
        nvidia.com/gpu: 1
{FENCE}
{FENCE}
RuntimeError: CUDA error: invalid device ordinal
{FENCE}
"""


def test_a_pod_spec_is_read_as_a_config() -> None:
    doc = read_document(POD)
    assert doc.configs.pod_gpus == 1
    assert doc.configs.pod_env == {"NVIDIA_VISIBLE_DEVICES": "0,1"}
    assert _first_category(POD) == "container_mapping"


def test_a_hostfile_with_more_slots_than_gpus() -> None:
    facts = ConfigFacts()
    read_text("worker-1 slots=8\nworker-2 slots=8\n", facts)
    assert facts.hostfile == {"worker-1": 8, "worker-2": 8}
    assert [c for c, _, _ in config_points(facts, None, 4)] == ["oversubscribed"]


_YAMLISH = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(
            st.sampled_from(["name", "value", "nvidia.com/gpu", "hostNetwork", "privileged",
                             "num_processes", "gpu_ids", "env", "resources", "limits"]),
            inner,
            max_size=5,
        ),
    ),
    max_leaves=20,
)  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(_YAMLISH, st.integers(0, 16) | st.none(), st.integers(0, 16) | st.none())
def test_config_readers_never_crash(doc: object, nproc: int | None, gpus: int | None) -> None:
    facts = ConfigFacts()
    read_parsed(doc, facts)
    config_points(facts, nproc, gpus)


@settings(max_examples=200, deadline=None)
@given(
    st.text(
        alphabet=st.sampled_from(list("NCL version2.1840 Drivr:CUDA+cuslots=\n-")), max_size=400
    )
)
def test_version_and_line_readers_never_crash(text: str) -> None:
    conflicts(versions_in(text))
    read_text(text, ConfigFacts())


_NCCL_TEXT = joined_fragments(
    [
        "NCCL version 2.18.1",
        "nccl version: v2.21.5",
        "libnccl2=2.19.3",
        "libnccl.so.2.20.5",
        "nccl_2.17.1",
        "NCCL INFO ncclCommInitRank",
        "libnccl",
        "nccl",
        " ",
        "\n",
        "x",
        "İ",
        "2.1",
    ],
    filler=6,
    count=12,
)


@settings(max_examples=400, deadline=None)
@given(_NCCL_TEXT)
def test_nccl_versions_where_nccl_is_said_are_all_of_them(text: str) -> None:
    fast = [m.span() for m in _nccl_matches(text, text.lower())]
    assert fast == [m.span() for m in _NCCL.finditer(text)]


def test_a_unicode_digit_is_no_number() -> None:
    # str.isdigit() accepts superscripts that int() refuses; the readers check isdecimal()
    facts = ConfigFacts()
    read_parsed({"num_processes": "²", "gpu_ids": "¹,²"}, facts)
    assert config_points(facts, None, None) == []


NCCL_FAILED = "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error\n"


def test_a_reporter_saying_two_versions_do_not_fit_points_to_versions() -> None:
    for sentence in (
        "It seems to come from an incompatibility between the torch version and the NCCL version.",
        "The NCCL version bundled with the wheel does not match the CUDA toolkit.",
        "Our CUDA and driver versions are mismatched on the second node.",
    ):
        text = f"# NCCL error at init\n{sentence}\n{NCCL_FAILED}"
        assert _first_category(text) == "version_mismatch", sentence


def test_a_version_mismatch_ruled_out_or_outside_the_stack_is_no_evidence() -> None:
    ruled_out = "# NCCL error at init\nThere is no version mismatch between torch and NCCL.\n"
    assert _first_category(ruled_out + NCCL_FAILED) != "version_mismatch"
    # a version sentence with no failure of this family is no guess at all
    healthy = "# Question\nIs the tokenizer version incompatible with this checkpoint?\n"
    assert _first_category(healthy) == "other"
