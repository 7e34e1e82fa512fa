"""A CUDA library without code for the GPU's architecture (RM053): NCCL's `Cuda failure 'named
symbol not found'` when a build lacks the GPU's sm_XX (NVIDIA/nccl#1372), and the same CUDA
error outside NCCL, are version mismatches, not 'a failure outside the mapping'."""

from __future__ import annotations

import pytest
from paste_findings import alarms_of, findings_of

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


def test_the_same_error_outside_nccl_leans_to_a_version_mismatch_without_an_alarm() -> None:
    # outside NCCL the words also come from a misspelt kernel name or a dlsym loader: they rank
    # causes, they raise no alarm on their own
    text = (
        "Traceback (most recent call last):\n"
        '  File "bench.py", line 9, in <module>\n'
        "RuntimeError: CUDA error: named symbol not found\n"
    )
    first = findings_of(text)[0]
    assert first.category == "version_mismatch"
    assert first.severity.value == "info"


NOT_NCCL = {
    "kernel-name": "# RawKernel fails after renaming the kernel\n\n"
    "```\ncupy_backends.cuda.api.driver.CUDADriverError: CUDA_ERROR_NOT_FOUND: named symbol not "
    'found\n```\nThe C++ compiler mangled the name; extern "C" fixed it.\n',
    "plugin-loader": "# Plugin loading fails on start\n\n"
    "```\nERROR loader.c:88 dlsym(plugin_init): named symbol not found\n```\n",
    "question": "# Question: what does named symbol not found mean?\n\nI saw it once in a "
    "forum post and wonder whether it concerns multi-GPU jobs.\n",
}


@pytest.mark.parametrize("name", sorted(NOT_NCCL))
def test_the_words_outside_nccl_are_no_alarm(name: str) -> None:
    assert not alarms_of(NOT_NCCL[name])


def test_a_cuda_failure_that_names_another_cause_stays_outside() -> None:
    log = f"{HOST} enqueue.cc:58 NCCL WARN Cuda failure 'out of memory'\n"
    assert all(f.code != "RM053" for f in findings_of(log))
    log = f"{HOST} proxy.cc:1 NCCL WARN Cuda failure 'initialization error'\n"
    first = findings_of(log)[0]
    assert first.code != "RM053"
    assert first.category != "version_mismatch"
