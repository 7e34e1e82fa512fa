"""Messages of stacks beyond PyTorch that name a failure of this family: Open MPI's slot
refusal, Kubernetes' unschedulable GPU pod, Ray's unmet resource request, TensorFlow's explicit
device specification, and NCCL's results in XLA's and CuPy's spelling. Every line is a shape
written for these tests (the message formats the cited sources document)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.explain.docread import read_document
from rankmap.explain.patterns import _result_code
from rankmap.findings import Finding, Severity


def _first(text: str) -> Finding:
    return explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()[0]


@pytest.mark.parametrize(
    ("line", "sid", "category"),
    [
        (
            "There are not enough slots available in the system to satisfy the 16 slots\n"
            "that were requested by the application:\n  python\n",
            "mpi-slots",
            "launcher_config",
        ),
        (
            "(autoscaler) Warning: No available node types can fulfill resource request "
            "{'GPU': 8.0, 'CPU': 1.0}. Add suitable node types to this cluster.\n",
            "ray-resources-unmet",
            "oversubscribed",
        ),
    ],
)
def test_a_launcher_or_scheduler_refusal_is_a_warning_guess(
    line: str, sid: str, category: str
) -> None:
    assert sid in read_document(line).hits
    first = _first(line)
    assert (first.category, first.severity) == (category, Severity.WARNING)


def test_a_pod_waiting_for_free_gpus_is_a_possible_cause_not_an_alarm() -> None:
    # "Insufficient nvidia.com/gpu" also means a full cluster (review 18), unlike Ray's "no
    # node type can fulfill" or MPI's missing slots, which no wait resolves
    line = (
        "Warning  FailedScheduling  default-scheduler  0/4 nodes are available: "
        "4 Insufficient nvidia.com/gpu.\n"
    )
    assert "k8s-gpu-unschedulable" in read_document(line).hits
    first = _first(line)
    assert first.category in ("container_mapping", "oversubscribed")
    assert first.severity == Severity.INFO
    stuck = "# pod stuck Pending\n" + line
    assert _first(stuck).severity == Severity.INFO  # "stuck Pending" is no hang


def test_a_ray_bundle_pinned_to_a_node_address_is_host_identity_not_a_count() -> None:
    line = (
        "No available node types can fulfill resource request {'node:10.1.2.3': 0.001, "
        "'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue.\n"
    )
    hits = read_document(line).hits
    assert {"ray-node-ip", "ray-resources-unmet"} <= set(hits)
    assert _first(line).category == "host_identity"
    assert "ray-node-ip" not in read_document("{'GPU': 1.0, 'CPU': 2.0}\n").hits


def test_a_tensorflow_device_beyond_the_visible_ones_is_an_invalid_device() -> None:
    line = (
        "InvalidArgumentError: Cannot assign a device for operation add: Could not satisfy "
        "explicit device specification '/device:GPU:2' because no devices matching that "
        "specification are registered in this process; available devices: "
        "/job:localhost/replica:0/task:0/device:CPU:0, /job:localhost/replica:0/task:0/device:GPU:0\n"
    )
    assert "invalid-device-any" in read_document(line).hits
    # an op without a GPU kernel is another failure
    other = (
        "Could not satisfy explicit device specification '/device:GPU:0' because no supported "
        "kernel for GPU devices is available.\n"
    )
    assert "invalid-device-any" not in read_document(other).hits


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (
            "XlaRuntimeError: INTERNAL: custom call 'all-reduce' failed: NCCL operation "
            "ncclCommInitRank(&comm, n, id, r) failed: invalid usage",
            "ncclInvalidUsage",
        ),
        ("NcclError: NCCL_ERROR_INVALID_USAGE: invalid usage", "ncclInvalidUsage"),
        ("NcclError: NCCL_ERROR_SYSTEM_ERROR: unhandled system error", "ncclSystemError"),
        (
            "NCCL operation ncclGroupEnd() failed: unhandled cuda error (run with NCCL_DEBUG=INFO "
            "for details)",
            "ncclUnhandledCudaError",
        ),
        ("ncclInternalError: Internal check failed.", "ncclInternalError"),
    ],
)
def test_nccl_results_are_read_in_every_stack_spelling(line: str, code: str) -> None:
    assert _result_code(line) == code


def test_torch_message_and_plain_text_name_no_extra_result() -> None:
    assert _result_code("RuntimeError: NCCL error in: pg.cpp:1, invalid usage") is None
    assert _result_code("the invalid usage of a word") is None


def test_an_xla_invalid_usage_at_init_reads_like_torch_one() -> None:
    line = (
        "jax.errors.JaxRuntimeError: INTERNAL: NCCL operation ncclCommInitRank(&comm, 2, id, 1) "
        "failed: invalid usage\n"
    )
    assert _first(line).code == "RM103"


@pytest.mark.parametrize(
    ("text", "sid"),
    [
        (
            "ValueError: Device id must be less than GPU count, but received id is: 5.\n",
            "invalid-device-any",
        ),
        ("I see that both processes run on each GPU of the server\n", "procs-on-every-gpu"),
        ("all 4 workers use every GPU\n", "procs-on-every-gpu"),
        ("we start several inference processes that share a GPU\n", "procs-share-a-gpu"),
        ("Use the local device rather than the rank to pick the GPU\n", "rank-not-local"),
        (
            "the framework uses the hostname to tell which node a process is on\n",
            "hostname-resolution",
        ),
        ("world_size: 2\ngpu_ranks: [0, 1]\n", "opennmt-gpu-ranks"),
        ("Our launcher wrongly assigns GPUs to the tasks\n", "device-selection-problem"),
    ],
)
def test_more_wordings_of_the_family(text: str, sid: str) -> None:
    assert sid in read_document(text).hits, (sid, text)


@pytest.mark.parametrize(
    ("text", "sid"),
    [
        ("each process uses one GPU\n", "procs-on-every-gpu"),
        ("the processes share a filesystem\n", "procs-share-a-gpu"),
        ("Device id 0 is fine\n", "invalid-device-any"),
    ],
)
def test_their_look_alikes_are_not(text: str, sid: str) -> None:
    assert sid not in read_document(text).hits, (sid, text)


def test_a_duplicate_gpu_said_in_prose_is_a_shared_gpu_report() -> None:
    hits = read_document("NCCL fails with a duplicated GPU when the trainer shares a card\n").hits
    assert "duplicate-gpu-words" in hits
    assert "duplicate-gpu-words" not in read_document("we duplicate the dataset per GPU\n").hits


def test_a_gpu_visible_per_process_is_no_device_count_failure() -> None:
    text = "systems where only one GPU is visible per process\n"
    assert "device-count-message" not in read_document(text).hits


def test_an_nccl_init_failure_said_in_prose_is_a_communicator_failure() -> None:
    text = "Running the example results in an error when calling ncclCommInitRank on rank 1.\n"
    assert "comm-init-error-words" in read_document(text).hits
    # a routine Init line is no failure
    init = (
        "node1:1:2 [0] NCCL INFO ncclCommInitRank comm 0x1 rank 0 nranks 2 cudaDev 0 - Init START\n"
    )
    assert "comm-init-error-words" not in read_document(init).hits


@pytest.mark.parametrize(
    ("text", "sid"),
    [
        (
            "It fails when a host runs more Horovod workers than available GPUs\n",
            "more-procs-than-gpus",
        ),
        ("the runtime only attaches to one GPU of each node\n", "one-gpu-used"),
        ("The base GPU id of each replica is not correct\n", "device-selection-problem"),
        (
            "This change makes the launcher respect CUDA_VISIBLE_DEVICES on one node\n",
            "cvd-ignored",
        ),
        ("Training with TF_CONFIG for two workers fails to start\n", "tf-cluster-config"),
        ("The local rank returned on the second node is the global rank\n", "local-rank-wrong"),
        ("Fix the local_rank computation for multi-node jobs\n", "local-rank-wrong"),
    ],
)
def test_wordings_of_fixes_and_short_titles(text: str, sid: str) -> None:
    assert sid in read_document(text).hits, (sid, text)


def test_a_correct_local_rank_is_no_such_report() -> None:
    text = "We read the local rank from LOCAL_RANK and pin the GPU with it\n"
    assert "local-rank-wrong" not in read_document(text).hits
