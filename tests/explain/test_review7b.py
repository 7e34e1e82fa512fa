"""Review 7b: false alarms and lost findings of session 7's explain changes, found by an
independent review (every input written for these tests; no reporter's text)."""

from __future__ import annotations

from pathlib import Path

import pytest
from paste_findings import alarms_of, findings_of

from rankmap.adapters.local import explain_files
from rankmap.findings import Finding, Severity

WATCHDOG_SEQ1 = (
    "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600009 milliseconds before "
    "timing out.\n"
)


def _first(text: str, **context: object) -> Finding:
    if not context:
        return findings_of(text)[0]
    import io

    report = explain_files([Path("-")], stdin=io.StringIO(text), **context)  # type: ignore[arg-type]
    return report.ordered_findings()[0]


REVIEW_7B_NO_ALARM = [
    # one process, one GPU: memory talk is no pile-up on GPU 0
    "# Question: memory when idle\n\nWhen serving a 7B model with vLLM on GPU 0 it uses a lot "
    "of memory even when idle. Is that the KV cache preallocation?\n",
    "# Single-GPU fine-tuning\n\nOn GPU 0 the optimizer states take most of the memory, about "
    "60 GB for a 7B model with Adam. Is 8-bit Adam worth it?\n",
    "# Loading the 70B model in fp32\n\nOn a single A100, GPU 0 uses more memory than I "
    "expected after loading the checkpoint; is fp32 really 4 bytes per parameter?\n",
    # a denied or a user's own undefined symbol is no version mismatch
    "# ncclCommRegister support\n\nDoes torch 2.3 use ncclCommRegister? I grepped libtorch and "
    "there is no undefined symbol ncclCommRegister, it is linked in.\n",
    "# build: undefined symbol in my own code\n\nMy CMake project gives undefined symbol "
    "cuDNNWrapperInit when linking my own library; I forgot to add the source file.\n",
    # failures outside the family on a MIG slice: the slice is a setting, not the cause
    "MIG 3g.40gb, single GPU job\nRuntimeError: DataLoader worker (pid 777) is killed by "
    "signal: Killed.\n",
]


def test_an_oom_of_a_model_too_big_for_its_mig_slice_leads_with_the_oom() -> None:
    text = (
        "# OOM loading a 13B model on a MIG 3g.40gb slice\n\ntorch.OutOfMemoryError: CUDA out of "
        "memory. Tried to allocate 270.00 MiB. GPU 0 has a total capacity of 39.50 GiB of which "
        "12.00 MiB is free.\n\nSingle process, no distributed. The model is bigger than the slice.\n"
    )
    assert not alarms_of(text)
    assert findings_of(text)[0].category == "other"


def test_a_person_named_ray_is_not_the_ray_framework() -> None:
    text = (
        "My colleague Ray launched `torchrun --nproc_per_node 8 train.py` on our 4-GPU "
        "workstation and ranks 4-7 stop with:\n\nRuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert _first(text).category == "oversubscribed"


def test_an_ignored_list_reported_in_the_next_sentence() -> None:
    text = (
        "I run CUDA_VISIBLE_DEVICES=1 python train.py on our 2-GPU box. The job still runs on "
        "GPU 0 and collides with the other job.\n"
    )
    first = _first(text)
    assert first.category == "visible_devices_mismatch" and first.severity is Severity.WARNING


def test_a_container_started_without_gpus_that_finds_none() -> None:
    text = "docker run -it img python train.py\nRuntimeError: No CUDA GPUs are available\n"
    assert _first(text).category == "container_mapping"
    asked = (
        "docker run --gpus all -it img python train.py\nRuntimeError: No CUDA GPUs are available\n"
    )
    assert _first(asked).category != "container_mapping"


@pytest.mark.parametrize(
    ("launch", "env", "category"),
    [
        # four processes in each one-GPU task
        (
            "srun --ntasks-per-node 4 --gpus-per-task 1 torchrun --nproc_per_node 4 train.py",
            {},
            "per_process_visible_devices",
        ),
        # four processes, two visible GPUs
        (
            "torchrun --nproc_per_node 4 train.py",
            {"CUDA_VISIBLE_DEVICES": "0,1"},
            "visible_devices_mismatch",
        ),
    ],
)
def test_a_launch_that_cannot_fit_is_positive_evidence(
    tmp_path: Path, launch: str, env: dict[str, str], category: str
) -> None:
    log = tmp_path / "job.log"
    log.write_text(WATCHDOG_SEQ1)
    first = explain_files([log], launch=launch, env=env).ordered_findings()[0]
    assert first.category == category and first.severity is Severity.WARNING


@pytest.mark.parametrize(
    "text",
    [
        "srun --ntasks-per-node 4 --gpus-per-task 1 python train.py\n"
        "node1:300:310 [0] NCCL INFO Channel 00 : 0[0] -> 1[0] via P2P/IPC\n"
        "node1:300:310 [0] NCCL WARN Cuda failure 'invalid argument'\n"
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled "
        "cuda error, NCCL version 2.18.1\n",
        "# vLLM with Ray: TP=2 fails\n\nvLLM starts Ray workers for tensor_parallel_size=2 on our "
        "2-GPU node:\n\n(RayWorkerWrapper pid=5512) torch.distributed.DistBackendError: NCCL "
        "error: unhandled cuda error, NCCL version 2.19.3\n",
    ],
    ids=["slurm-binding", "ray-workers"],
)
def test_a_cuda_failure_inside_nccl_under_per_process_visibility(text: str) -> None:
    first = _first(text)
    assert first.category == "per_process_visible_devices"
    assert first.severity is not Severity.INFO


def test_nccl_treating_two_nodes_as_one_machine_is_read_as_a_setting() -> None:
    from rankmap.explain.docread import read_document

    text = (
        "Both containers report hostname localhost, so NCCL treats our two nodes as one machine "
        "and ranks 8-15 pick GPUs 0-7 of node 1 again.\n"
    )
    hits = read_document(text).hits
    assert {"taken-for-one-host", "hostname-localhost"} <= set(hits)
    # a setting: with a failure it names the cause, without one it is no alarm
    assert not alarms_of(text)
    failing = text + "The job then hangs at the first all_reduce and times out.\n"
    first = _first(failing, launch="torchrun --nnodes 2 --nproc_per_node 8 train.py")
    assert first.category == "host_identity" and first.severity is not Severity.INFO


# Review 7c: a second independent review of the rules above.
REVIEW_7C_NO_ALARM = [
    # the writer's opinion, a question, a feature request: not NCCL's behaviour
    "# Question: will NCCL use NVLink automatically?\n\nI think both of my GPUs are on the "
    "same node (a DGX), so should NCCL pick NVLink by itself, or do I need NCCL_P2P_LEVEL=NVL?\n",
    "# Multi-node: connection refused\n\nI thought the two pods were on the same machine, but "
    "they are on different nodes, and the firewall blocks port 29500.\n"
    "torch.distributed.DistNetworkError: Connection refused\n",
    "# [Feature] Let NCCL treat two containers on one machine as one host\n\nWhen we run two "
    "containers on the same machine, NCCL treats them as different hosts and falls back to "
    "sockets. Could there be an option to treat them as one host so that P2P is used?\n",
    # GPU 0 busier in one process, or current_device() 0 under per-worker visibility: healthy
    "With Ray Train (4 workers, 1 GPU each), every worker reports current_device() returns 0. "
    "nvidia-smi shows four GPUs busy, one process each. Just curious why.\n",
    "# How do I use all 4 GPUs?\n\nI run python infer.py (one process, no distributed) and "
    "nvidia-smi shows GPU 0 at 100% while GPUs 1-3 sit at 0%. How do I make my script use the "
    "other three?\n",
    # a CUDA failure inside NCCL that names its own cause, under Ray or a mentioned binding
    "(RayWorkerWrapper pid=9001) node1:9001:9120 [0] include/alloc.h:103 NCCL WARN Cuda "
    "failure 'out of memory'\n(RayWorkerWrapper pid=9001) torch.distributed.DistBackendError: "
    "NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled cuda error, NCCL version 2.19.3\n",
    "# NCCL unhandled cuda error with big batch\n\nWe tried --gpus-per-task once but went "
    "back to --gres=gpu:4 with one task per node.\nnode1:4001:4100 [0] NCCL WARN Cuda failure "
    "'out of memory'\ntorch.distributed.DistBackendError: NCCL error: unhandled cuda error, "
    "NCCL version 2.18.1\n",
]


def test_a_store_reset_after_a_mig_hang_keeps_the_mig_alarm() -> None:
    # the other ranks' network errors once one rank is gone are not a failure of their own
    text = (
        "# DDP on two MIG slices hangs\n\nTwo ranks, each on one MIG 3g.40gb instance of the "
        "same A100, torchrun --nproc_per_node 2 train.py.\n"
        "[rank1]:[E ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600020 "
        "milliseconds before timing out.\n"
        "[rank0]:[W TCPStore.cpp:141] [c10d] recvValue failed on SocketImpl(fd=4): Connection "
        "reset by peer\ntorch.distributed.DistStoreError: failed to recv, got 0 bytes\n"
    )
    first = _first(text)
    assert first.category == "mig" and first.severity is not Severity.INFO
    told = text + "Earlier the model got an OOM on the 10gb slices so we moved to 3g.40gb.\n"
    assert _first(told).severity is not Severity.INFO  # an OOM told, not printed


def test_gpus_after_the_image_are_the_containers_arguments() -> None:
    text = (
        "docker run myimg:latest --gpus all python train.py\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    assert _first(text).category == "container_mapping"


def test_a_container_run_continued_past_the_paste_is_no_evidence() -> None:
    from rankmap.explain.docread import read_document

    text = "```bash\ndocker run --rm -it \\\n```\n\nRuntimeError: No CUDA GPUs are available\n"
    doc = read_document(text)
    assert doc.container_runs and doc.container_runs[-1].endswith("\\")
    from rankmap.explain.containers import container_without_gpus
    from rankmap.explain.score_model import Scores

    scores = Scores()
    container_without_gpus(doc, scores)
    assert "container_mapping" not in scores.points


@pytest.mark.parametrize("text", [*REVIEW_7B_NO_ALARM, *REVIEW_7C_NO_ALARM])
def test_review_7b_and_7c_no_alarm(text: str) -> None:
    assert not alarms_of(text), [(f.code, f.severity) for f in alarms_of(text)]
