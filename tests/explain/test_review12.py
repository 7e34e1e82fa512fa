"""Review 12 (log + flags, inputs a helper wrote): a job that fails on its own environment (an
OS errno, an unreachable model hub) next to settings that look like mapping context (a MIG
slice, a docker run with a GPU list) is no mapping alarm. Shapes written here."""

from __future__ import annotations

import io
from pathlib import Path

from rankmap.adapters.local import explain_files
from rankmap.findings import Finding

MIG = "MIG-4f3a9c1e-82b0-5d6e-9a71-0c2b3e4d5f60"


def _alarms(text: str, launch: str, env: dict[str, str]) -> list[Finding]:
    report = explain_files([Path("-")], stdin=io.StringIO(text), launch=launch, env=env)
    return [
        f for f in report.ordered_findings() if f.category != "other" and f.severity.value != "info"
    ]


def test_a_model_hub_error_on_one_mig_slice_is_no_mig_alarm() -> None:
    log = (
        "| MIG devices:                                                              |\n"
        ">>> torch.cuda.device_count() = 1, name = NVIDIA A100-SXM4-80GB MIG 3g.40gb\n"
        "Traceback (most recent call last):\n"
        '  File "/app/serve.py", line 31, in <module>\n'
        "OSError: We couldn't connect to 'https://huggingface.co' to load this file\n"
    )
    env = {"CUDA_VISIBLE_DEVICES": MIG, "NVIDIA_VISIBLE_DEVICES": MIG}
    assert not _alarms(log, "kubectl exec -it pod -- python serve.py", env)


def test_a_read_only_volume_in_a_gpu_container_is_no_container_alarm() -> None:
    log = (
        "inside container: torch.cuda.device_count()=4\n"
        "[rank0]: Traceback (most recent call last):\n"
        "[rank0]: OSError: [Errno 30] Read-only file system: '/output/run1'\n"
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
    )
    launch = "docker run --gpus '\"device=4,5,6,7\"' img torchrun --nproc_per_node 4 train.py"
    assert not _alarms(log, launch, {"NVIDIA_VISIBLE_DEVICES": "4,5,6,7"})
