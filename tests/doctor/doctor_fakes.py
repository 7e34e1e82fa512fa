"""Doctor test helpers: a scripted NVML (pynvml functions monkeypatched, gpustat style), fixed
system facts, and golden-file comparison (regenerate with RANKMAP_UPDATE_GOLDEN=1)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml
import pytest

from rankmap.adapters.versions import Versions
from rankmap.doctor.engine import SystemFacts
from rankmap.model import HostIdentity

GOLDEN = Path(__file__).parents[1] / "golden"
SMI = Path(__file__).parents[1] / "data" / "smi"


@dataclass
class FakeGpu:
    uuid: str
    bus_id: str  # NVML spelling, "00000000:4F:00.0"
    name: str = "NVIDIA A100-SXM4-80GB"
    memory_bytes: int = 85899345920
    cc: tuple[int, int] = (8, 0)
    mig: list[tuple[str, int, int]] | None = None  # (uuid, gi, ci); None: MIG NotSupported
    processes: list[tuple[int, str, int | None]] = field(default_factory=list)


@dataclass
class FakeNvml:
    """Scripted NVML. ``fail[(function, gpu_index or None)] = NVML_ERROR_*``."""

    gpus: list[FakeGpu]
    driver: Any = "535.216.01"
    cuda: int = 12020
    init_error: int | None = None
    fail: dict[tuple[str, int | None], int] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def _check(self, name: str, index: int | None) -> None:
        self.calls.append(name)
        code = self.fail.get((name, index), self.fail.get((name, None)))
        if code is not None:
            raise pynvml.NVMLError(code)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        def handle_index(h: Any) -> int | None:
            return h.index if isinstance(h, SimpleNamespace) else None

        def fn(name: str, impl: Callable[..., Any]) -> None:
            def wrapper(*args: Any) -> Any:
                self._check(name, handle_index(args[0]) if args else None)
                return impl(*args)

            monkeypatch.setattr(pynvml, name, wrapper)

        def init() -> None:
            self.calls.append("nvmlInit")
            if self.init_error is not None:
                raise pynvml.NVMLError(self.init_error)

        monkeypatch.setattr(pynvml, "nvmlInit", init)
        monkeypatch.setattr(pynvml, "nvmlShutdown", lambda: None)
        g = self.gpus
        fn("nvmlSystemGetDriverVersion", lambda: self.driver)
        fn("nvmlSystemGetCudaDriverVersion_v2", lambda: self.cuda)
        fn("nvmlSystemGetCudaDriverVersion", lambda: self.cuda)
        fn("nvmlSystemGetNVMLVersion", lambda: "12.535.216.01")
        fn("nvmlDeviceGetCount", lambda: len(g))
        monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", self._handle)
        fn("nvmlDeviceGetUUID", lambda h: h.mig_uuid if h.mig_uuid else g[h.index].uuid)
        fn("nvmlDeviceGetPciInfo", lambda h: SimpleNamespace(busId=g[h.index].bus_id))
        fn("nvmlDeviceGetName", lambda h: g[h.index].name)
        fn(
            "nvmlDeviceGetMemoryInfo",
            lambda h: SimpleNamespace(total=g[h.index].memory_bytes if not h.mig_uuid else 5 << 30),
        )
        fn("nvmlDeviceGetCudaComputeCapability", lambda h: g[h.index].cc)
        fn("nvmlDeviceGetMinorNumber", lambda h: h.index)
        fn("nvmlDeviceGetMigMode", self._mig_mode)
        fn("nvmlDeviceGetMaxMigDeviceCount", lambda h: 7)
        fn("nvmlDeviceGetMigDeviceHandleByIndex", self._mig_handle)
        fn("nvmlDeviceGetGpuInstanceId", lambda h: h.gi)
        fn("nvmlDeviceGetComputeInstanceId", lambda h: h.ci)
        fn(
            "nvmlDeviceGetComputeRunningProcesses",
            lambda h: [
                SimpleNamespace(pid=pid, usedGpuMemory=mem) for pid, _, mem in g[h.index].processes
            ],
        )
        names = {pid: name for gpu in g for pid, name, _ in gpu.processes}
        fn("nvmlSystemGetProcessName", lambda pid: names[pid].encode())  # old pynvml: bytes

    def _handle(self, index: int) -> Any:
        self._check("nvmlDeviceGetHandleByIndex", index)
        if index >= len(self.gpus):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_INVALID_ARGUMENT)
        return SimpleNamespace(index=index, mig_uuid=None, gi=None, ci=None)

    def _mig_mode(self, h: Any) -> list[int]:
        if self.gpus[h.index].mig is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return [1, 1]

    def _mig_handle(self, h: Any, i: int) -> Any:
        migs = self.gpus[h.index].mig or []
        if i >= len(migs):
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        uuid, gi, ci = migs[i]
        return SimpleNamespace(index=h.index, mig_uuid=uuid, gi=gi, ci=ci)


def two_gpus() -> list[FakeGpu]:
    return [
        FakeGpu("GPU-11111111-2222-3333-4444-555555555555", "00000000:4F:00.0"),
        FakeGpu(
            "GPU-66666666-7777-8888-9999-aaaaaaaaaaaa",
            "00000000:52:00.0",
            processes=[(4242, "python", 14195 * 1024 * 1024)],
        ),
    ]


FIXED_IDENTITY = HostIdentity(
    hostname="gpu-node-01",
    boot_id="6c1e0f3a-8d0e-4b47-9a5e-2f4b1c7d9e10",
    machine_id="0f7c3a9e5d2b4c8a9e1f0a2b3c4d5e6f",
)


def system_facts(
    identity: HostIdentity = FIXED_IDENTITY, versions: Versions | None = None
) -> Callable[[], SystemFacts]:
    """A ``ctx.system_facts`` port with fixed identity and versions."""
    v = versions or Versions(
        torch_version="2.5.1+cu124",
        torch_cuda_version="12.4",
        nccl_version="2.21.5",
        nccl_source="nvidia-nccl-cu12 wheel",
        python_version="3.11.7",
    )
    return lambda: SystemFacts(identity, v)


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/<name>; RANKMAP_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN / name
    if os.environ.get("RANKMAP_UPDATE_GOLDEN") == "1" or not path.exists():
        path.write_text(actual, encoding="utf-8")
        if os.environ.get("RANKMAP_UPDATE_GOLDEN") != "1":
            pytest.fail(f"golden file {name} was missing and has been written; re-run")
    assert actual == path.read_text(encoding="utf-8"), (
        f"{name} differs; regenerate with RANKMAP_UPDATE_GOLDEN=1 if the change is intended"
    )
