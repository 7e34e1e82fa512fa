"""A CUDA library without code for the GPU's architecture (RM053): NCCL's `Cuda failure 'named
symbol not found'` when a build lacks the GPU's sm_XX (NVIDIA/nccl#1372), and the same CUDA
error outside NCCL, are version mismatches, not 'a failure outside the mapping'."""

from __future__ import annotations

from paste_findings import findings_of

from rankmap.codes import lookup

HOST = "node7:4711:4790 [0]"


def test_nccl_named_symbol_not_found_is_a_build_without_the_gpus_architecture() -> None:
    log = (
        f"{HOST} NCCL INFO cudaDriverVersion 12040\n"
        "NCCL version 2.18.1+cuda12.1\n"
        f"{HOST} enqueue.cc:58 NCCL WARN Cuda failure 'named symbol not found'\n"
        f"{HOST} enqueue.cc:47 NCCL WARN Cuda failure 'named symbol not found'\n"
        "RuntimeError: NCCL Error 1: unhandled cuda error\n"
    )
    first = findings_of(log)[0]
    assert first.code == "RM053"
    assert first.category == "version_mismatch"
    assert first.severity.value == "error"
    assert "named symbol not found" in first.title
    assert first.evidence and "enqueue.cc:58" in first.evidence[0]
    assert "NVCC_GENCODE" in lookup("RM053").fix


def test_the_same_error_outside_nccl_leans_to_a_version_mismatch() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "bench.py", line 9, in <module>\n'
        "RuntimeError: CUDA error: named symbol not found\n"
    )
    assert findings_of(text)[0].category == "version_mismatch"


def test_a_cuda_failure_that_names_another_cause_stays_outside() -> None:
    log = f"{HOST} enqueue.cc:58 NCCL WARN Cuda failure 'out of memory'\n"
    assert all(f.code != "RM053" for f in findings_of(log))
    log = f"{HOST} proxy.cc:1 NCCL WARN Cuda failure 'initialization error'\n"
    first = findings_of(log)[0]
    assert first.code != "RM053"
    assert first.category != "version_mismatch"
