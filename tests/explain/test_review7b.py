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


@pytest.mark.parametrize(
    "text",
    [
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
    ],
)
def test_review_7b_no_alarm(text: str) -> None:
    assert not alarms_of(text), [(f.code, f.severity) for f in alarms_of(text)]


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


@pytest.mark.parametrize(
    ("text", "category"),
    [
        (
            "Both ranks report torch.cuda.current_device() == 0 under torchrun --nproc_per_node 2, "
            "so they share GPU 0 and GPU 1 stays empty.\n",
            "no_set_device",
        ),
        (
            "# 4 GPUs are 4x slower than 1\n\nWith accelerate launch --num_processes 4 train.py each "
            "step takes 4x longer, and nvidia-smi shows GPU 0 at 100% while GPUs 1-3 sit at 0%.\n",
            "no_set_device",
        ),
    ],
)
def test_review_7b_wordings_of_a_pile_up_on_gpu0(text: str, category: str) -> None:
    assert _first(text).category == category


def test_nccl_treating_two_nodes_as_one_machine(tmp_path: Path) -> None:
    text = (
        "Both containers report hostname localhost, so NCCL treats our two nodes as one machine "
        "and ranks 8-15 pick GPUs 0-7 of node 1 again.\n"
    )
    first = _first(text, launch="torchrun --nnodes 2 --nproc_per_node 8 train.py")
    assert first.category == "host_identity" and first.severity is not Severity.INFO
