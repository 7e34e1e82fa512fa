"""explain v2, generalising: failure classes with priors, negation in prose, weak-evidence guesses.

Every paste below is a shape written for these tests (no reporter's text).
"""

from __future__ import annotations

import io
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.adapters.local import explain_files
from rankmap.explain.catalogue import SIGNALS
from rankmap.explain.denial import negated
from rankmap.explain.docread import _search, read_document
from rankmap.findings import Finding, Severity

MAPPING_ALARM = "a finding of a mapping category above info"


def _findings(text: str, **kw: object) -> list[Finding]:
    report = explain_files([Path("-")], stdin=io.StringIO(text), **kw)  # type: ignore[arg-type]
    return report.ordered_findings()


def _alarms(fs: list[Finding]) -> list[str]:
    return [f.code for f in fs if f.category != "other" and f.severity is not Severity.INFO]


CLASS_EXAMPLES = {
    "invalid-device-any": [
        "hipErrorInvalidDevice",
        "CUDA_ERROR_INVALID_DEVICE: invalid device ordinal",
        "cudaErrorInvalidDevice",
        "RuntimeError: device ordinal 3 is out of range",
        "GPU index 4 is out of range",
        "invalid device id",
    ],
    "visible-devices-any": ["ASCEND_RT_VISIBLE_DEVICES=0,1", "ZE_AFFINITY_MASK=0.0"],
    "device-count-message": [
        "but only 1 GPU is available",
        "torch.cuda.device_count() returns 1",
        "Tensor parallel size (4) exceeds available GPUs (2)",
        "detected only 1 GPU",
    ],
    "device-error-any": [
        "RuntimeError: CUDA error: initialization error",
        "cudaErrorSystemNotReady",
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: Failed to execute",
        "hipErrorNoDevice",
    ],
    "comm-error-any": [
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275",
        "ncclRemoteError: remote process exited",
        "Watchdog caught collective operation timeout",
    ],
    "nccl-cuda-call-failed": [
        "RuntimeError: NCCL Error 1: unhandled cuda error",
        "ncclCommInitRank failed: unhandled cuda error",
        "node1:77:77 [0] NCCL WARN Cuda failure 'invalid argument'",
    ],
    "hang-at-collective": [
        "training hangs at init_process_group",
        "dist.barrier() never returns",
        "it gets stuck at the first all_reduce",
    ],
    "ray-node-ip": ["Error: resource request {'node:10.0.0.2': 0.001, 'GPU': 1.0} never fits"],
    "ray-resources-unmet": [
        "Error: No available node types can fulfill resource request {'GPU': 1.0}"
    ],
}
NOT_OF_THE_CLASS = {
    "invalid-device-any": ["CUDA error: invalid device function", "invalid device pointer"],
    "device-count-message": ["Found 8 GPUs on this node", "detected 4 cuda devices"],
    "nccl-cuda-call-failed": ["NCCL WARN Cuda failure 'out of memory'"],
    "device-error-any": [
        "RuntimeError: CUDA error: out of memory",
        "CUDA error: device-side assert triggered",
        "CUDA error: an illegal memory access was encountered",
    ],
}


def test_every_class_matches_its_family_and_not_the_look_alikes() -> None:
    by_id = {s.id: s for s in SIGNALS}
    for sid, lines in CLASS_EXAMPLES.items():
        sig = by_id[sid]
        assert sig.failure or sid == "visible-devices-any", sid
        for line in lines:
            text = "noise\n" * 30 + line + "\n" + "noise\n" * 30
            assert _search(sig, text, text.lower()), (sid, line)
    for sid, lines in NOT_OF_THE_CLASS.items():
        for line in lines:
            assert not by_id[sid].pattern.search(line), (sid, line)


def test_a_bare_family_failure_gets_a_warning_guess_never_nothing_recognised() -> None:
    for text in (
        "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_INVALID_DEVICE\n",
        "RuntimeError: HIP error: hipErrorInvalidDevice\n",
        "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1275, "
        "unhandled cuda error\n",
        "my job is stuck at dist.barrier() on 2 nodes\n",
    ):
        first = _findings(text)[0]
        assert first.code != "RM003", text
        assert first.severity is not Severity.INFO, (text, first.code)
        assert "decide" in first.detail.lower(), (text, first.code)


def test_generic_device_or_communicator_errors_lean_to_other_not_a_mapping_alarm() -> None:
    for text in (
        "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1169, unhandled system error, "
        "NCCL version 2.10.3\nncclSystemError: System call (socket, malloc, munmap, etc) failed.\n",
        "RuntimeError: CUDA error: initialization error\n",
        "[E ProcessGroupNCCL.cpp:455] Watchdog caught collective operation timeout\n",
    ):
        fs = _findings(text)
        assert fs[0].code == "RM045", (text, fs[0].code)
        assert not _alarms(fs), (text, MAPPING_ALARM)


def test_failures_outside_the_family_stay_nothing_recognised() -> None:
    for text in (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 3.2 GiB is free. The 70B model does not fit.\n",
        "RuntimeError: CUDA error: device-side assert triggered\n",
        "ModuleNotFoundError: No module named 'fire'\n",
        "Found 8 GPUs. Training finished, loss 0.12\n",
    ):
        fs = _findings(text)
        assert not _alarms(fs), (text, [f.code for f in fs])


def test_a_ray_placement_group_pinned_to_an_unknown_node_is_host_identity() -> None:
    text = (
        "(EngineCore pid=1) Error: No available node types can fulfill resource request "
        "{'GPU': 1.0, 'node:10.0.0.5': 0.001}.\n"
    )
    assert _findings(text)[0].category == "host_identity"


def test_prose_can_deny_a_setting() -> None:
    hit = read_document("Our cluster runs jobs inside docker containers.\n").hits
    assert "docker-word" in hit
    for denied in (
        "I am not using docker for this.\n",
        "This runs without a container.\n",
        "We don't use Ray.\n",
        "MIG disabled on every GPU.\n",
    ):
        ids = set(read_document(denied).hits)
        assert not ids & {"docker-word", "inside-container", "ray", "mig-word", "mig-mode"}, (
            denied,
            ids,
        )
    # a contrast or a failure is not a denial
    assert "mig-mode" in read_document("vLLM doesn't support multi-instance GPU\n").hits
    assert (
        "rank-not-local"
        in read_document("it should use local_rank, not the rank in the world\n").hits
    )


def test_negation_window_is_one_clause() -> None:
    text = "I'm not sure why, but docker hides the GPUs"
    start = text.index("docker")
    assert not negated(text, start, start + 6)
    text = "not using docker"
    assert negated(text, 10, 16)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("not dockerMIG ,.\n'-:")), max_size=300))
def test_negation_never_crashes_and_stays_bounded(text: str) -> None:
    read_document(text)
    for i in range(0, len(text), 17):
        negated(text, i, min(len(text), i + 5))


def test_a_model_too_big_keeps_context_from_making_a_mapping_guess() -> None:
    text = (
        "The model is too big to run on one GPU, so I use two GPUs with "
        "`CUDA_VISIBLE_DEVICES=2,3 python -m torch.distributed.launch --nproc_per_node=1 train.py`."
        " Can it only run on one GPU?\n"
    )
    assert not _alarms(_findings(text))


def test_shm_bus_error_inside_docker_is_not_a_container_alarm() -> None:
    text = (
        "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient "
        "shared memory (shm).\n\nI run it with `docker run --gpus all -it image`.\n"
    )
    assert not _alarms(_findings(text))


def test_deepspeed_ignoring_cvd_is_the_launcher() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES is not respected\n\n"
        "$ CUDA_VISIBLE_DEVICES=1 deepspeed --num_gpus=1 train.py\n"
        "Detected CUDA_VISIBLE_DEVICES=1 but ignoring it because one or several of "
        "--include/--exclude/--num_gpus/--num_nodes cl args were used.\n"
    )
    assert _findings(text)[0].category == "launcher_config"


def test_ipc_failure_under_per_task_binding_is_per_process_visibility() -> None:
    text = (
        "Works without --gpus-per-task.\n\n$ srun -n 4 --gpus-per-task=1 ./app\n"
        "cuIpcOpenMemHandle: invalid argument, CUDA_ERROR_INVALID_VALUE\n"
    )
    assert _findings(text)[0].category == "per_process_visible_devices"


def test_cvd_changed_after_cuda_init_is_visibility_not_mig() -> None:
    text = (
        "We set CUDA_VISIBLE_DEVICES after import torch in main().\n"
        "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED\n"
    )
    assert _findings(text)[0].category == "visible_devices_mismatch"


def test_a_cudnn_version_field_is_not_a_failure() -> None:
    text = "Torch sees the GPU\n\n- CUDA/cuDNN version: 11.8 / 8.9\n- GPU models: 1x A100\n"
    assert not _alarms(_findings(text))


def test_an_issue_template_left_unanswered_says_nothing() -> None:
    from rankmap.explain.docread import without_template

    text = (
        "<!-- If you use docker or MIG,\nsay so here -->\n- PyTorch Version (e.g., 1.10):\n"
        "- How you installed it (`conda`, `pip`, source):\nreal line\n"
    )
    out = without_template(text)
    assert out.count("\n") == text.count("\n")  # line numbers kept
    assert "docker" not in out and "e.g." not in out and "real line" in out
    assert not read_document(text).hits


def test_context_alone_is_not_a_mapping_guess() -> None:
    # a visible-devices list and a launch are everyday context; with only failure words (no
    # failure of this family) they do not make a mapping alarm
    text = (
        "Distributed training on a subset of GPUs does not work\n\n"
        "$ CUDA_VISIBLE_DEVICES=2,3,4,5 torchrun --nproc_per_node 4 train.py\n"
    )
    assert not _alarms(_findings(text))


def test_a_port_in_use_is_a_network_problem_not_a_mapping_alarm() -> None:
    text = "RuntimeError: Address already in use\n\nTwo jobs on one server, GPUs 0,1 and 2,3.\n"
    fs = _findings(text)
    assert fs[0].code == "RM906" and fs[0].severity is Severity.INFO
    assert not _alarms(fs)


def test_a_network_timeout_with_a_framework_is_other() -> None:
    text = (
        "jax.distributed.initialize() hangs on 4 hosts\n\n"
        "DEADLINE_EXCEEDED: Deadline Exceeded\nRPC: /tensorflow.CoordinationService/RegisterTask\n"
    )
    assert not _alarms(_findings(text))


def test_a_hardware_fault_is_other() -> None:
    text = (
        "cuCtxCreate returned error 214 (CUDA_ERROR_ECC_UNCORRECTABLE): uncorrectable ECC error\n"
    )
    fs = _findings(text)
    assert fs[0].category == "other" and not _alarms(fs)


def test_nvidia_visible_devices_ignored_is_the_container() -> None:
    text = (
        "NVIDIA_VISIBLE_DEVICES not being respected by the container runtime\n\n"
        "All 8 GPUs are visible in the pod despite the limit nvidia.com/gpu: 1\n"
    )
    assert _findings(text)[0].category == "container_mapping"


def test_a_duplicate_gpu_outweighs_the_priors_of_the_generic_nccl_error() -> None:
    text = (
        "[rank4]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
        "invalid usage\nDuplicate GPU detected : rank 4 and rank 0 both on CUDA device 4f000\n"
    )
    first = _findings(text)[0]
    assert first.code == "RM103" and first.severity is Severity.ERROR


def test_a_container_that_sees_more_gpus_than_it_was_given() -> None:
    text = (
        "$ NV_GPU=1 nvidia-docker run -it --rm --privileged=true nvidia/cuda\n"
        "root@c0:/# nvidia-smi -q | grep UUID\n"
        "    GPU UUID : GPU-03073c9f-999e-eccd-39b4-73c351820dd2\n"
        "    GPU UUID : GPU-7e2911a7-f907-a3bd-da2c-6d4b07556478\n"
        "Why do I see two GPUs?\n"
    )
    doc = read_document(text)
    assert doc.gpu_uuids == 2 and doc.gpus_requested == 1
    assert _findings(text)[0].category == "container_mapping"


def test_memory_another_process_holds_is_a_shared_gpu_and_mig_caps_are_mig() -> None:
    by_id = {s.id: s for s in SIGNALS}
    assert by_id["gpu-held-by-another"].pattern.search(
        "ValueError: Free memory on device cuda:1 (7.16/79.18 GiB) on startup is less than desired"
    )
    for message in (  # cudaErrorDevicesUnavailable's wordings across CUDA releases
        "all CUDA-capable devices are busy or unavailable",
        "CUDA-capable device(s) is/are busy or unavailable",
    ):
        assert by_id["gpu-held-by-another"].pattern.search(message), message
    assert by_id["gpu-held-by-another"].pattern.search(
        "CUDA-capable device(s) are busy or unavailable"
    )
    assert by_id["mig-caps"].pattern.search("/proc/driver/nvidia/capabilities/gpu0/mig/gi3/access")
