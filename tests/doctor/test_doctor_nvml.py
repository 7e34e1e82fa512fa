"""The NVML gateway against scripted pynvml functions (gpustat style scenarios)."""

from __future__ import annotations

import sys

import pynvml
import pytest
from doctor_fakes import FakeGpu

from rankmap.adapters import nvml
from rankmap.findings import Severity


def test_healthy_two_gpus(fake_nvml) -> None:
    fake_nvml()
    host, findings = nvml.collect_host({})
    assert findings == []
    assert host is not None
    assert [(g.nvml_index, g.pci_bus_id) for g in host.gpus] == [
        (0, "0000:4F:00.0"),
        (1, "0000:52:00.0"),
    ]
    assert host.driver_version == "535.216.01"
    assert host.cuda_driver_version == "12.2"
    assert host.gpus[0].compute_capability == "8.0"
    assert host.gpus[0].memory_mib == 81920
    assert host.gpus[0].mig_mode is False and host.gpus[0].errors == ()
    proc = host.gpus[1].processes[0]  # type: ignore[index]
    assert (proc.pid, proc.name, proc.used_memory_mib) == (4242, "python", 14195)
    assert host.source == "nvml"


def test_init_is_lazy_and_happens_once(fake_nvml) -> None:
    fake = fake_nvml()
    import rankmap.adapters.nvml  # noqa: F401 - importing does not initialise

    assert "nvmlInit" not in fake.calls
    nvml.nvml_call("nvmlDeviceGetCount")
    nvml.nvml_call("nvmlDeviceGetCount")
    assert fake.calls.count("nvmlInit") == 1


def test_bytes_from_old_pynvml_are_decoded(fake_nvml) -> None:
    fake_nvml(
        [FakeGpu("GPU-11111111-2222-3333-4444-555555555555", "00000000:07:00.0")],
        driver=b"470.57.02",
    )
    host, _ = nvml.collect_host({})
    assert host is not None and host.driver_version == "470.57.02"
    assert nvml.text(b"GPU-abc\x00") == "GPU-abc"


@pytest.mark.parametrize(("raw", "version"), [(12020, "12.2"), (11040, "11.4"), (13000, "13.0")])
def test_cuda_driver_version_decoding(raw: int, version: str) -> None:
    assert nvml.decode_cuda_version(raw) == version


def test_not_supported_fields_are_explained_not_fatal(fake_nvml) -> None:
    fake_nvml(
        fail={
            ("nvmlDeviceGetComputeRunningProcesses", 0): pynvml.NVML_ERROR_NOT_SUPPORTED,
            ("nvmlDeviceGetCudaComputeCapability", None): pynvml.NVML_ERROR_NOT_SUPPORTED,
        }
    )
    host, findings = nvml.collect_host({})
    assert host is not None
    gpu0 = host.gpus[0]
    assert gpu0.processes is None  # unknown, not "no processes"
    assert gpu0.compute_capability is None
    assert any(e.startswith("processes: NotSupported") for e in gpu0.errors)
    assert {f.code for f in findings} == {"RM002"}
    assert all(f.severity is Severity.INFO for f in findings)  # NotSupported only


def test_no_permission_for_processes(fake_nvml) -> None:
    fake_nvml(
        fail={("nvmlDeviceGetComputeRunningProcesses", None): pynvml.NVML_ERROR_NO_PERMISSION}
    )
    host, findings = nvml.collect_host({})
    assert host is not None and len(host.gpus) == 2
    assert "NoPermission" in host.gpus[1].errors[0]
    assert [f.severity for f in findings] == [Severity.WARNING, Severity.WARNING]
    assert "permission" in findings[0].detail


def test_gpu_is_lost_on_one_gpu_keeps_the_others(fake_nvml) -> None:
    gpus = [
        FakeGpu(f"GPU-{i}1111111-2222-3333-4444-555555555555", f"00000000:{bus}:00.0")
        for i, bus in enumerate(("18", "2A", "3A", "5D"))
    ]
    fake_nvml(gpus, fail={("nvmlDeviceGetHandleByIndex", 2): pynvml.NVML_ERROR_GPU_IS_LOST})
    host, findings = nvml.collect_host({})
    assert host is not None
    assert [g.pci_bus_id for g in host.gpus] == [
        "0000:18:00.0",
        "0000:2A:00.0",
        None,
        "0000:5D:00.0",
    ]
    lost = host.gpus[2]
    assert lost.uuid.startswith("unknown-uuid:")
    assert "GpuIsLost" in lost.errors[0] and "Xid 79" in lost.errors[0]
    assert [f.title for f in findings] == ["GPU 2: NVML could not read 1 field(s)"]


def test_gpu_is_lost_midway_through_fields(fake_nvml) -> None:
    fake_nvml(fail={("nvmlDeviceGetUUID", 1): pynvml.NVML_ERROR_GPU_IS_LOST})
    host, findings = nvml.collect_host({})
    assert host is not None
    assert host.gpus[1].pci_bus_id == "0000:52:00.0"
    assert host.gpus[1].uuid == "unknown-uuid:nvml1"
    assert findings[0].devices == ("0000:52:00.0",)


def test_driver_library_mismatch_at_init(fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    host, findings = nvml.collect_host({})
    assert host is None
    assert [f.code for f in findings] == ["RM002"]
    assert findings[0].severity is Severity.ERROR
    assert "reboot" in findings[0].detail
    ok, reason = nvml.nvml_available()
    assert not ok and "mismatch" in reason


def test_library_not_found(fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    host, findings = nvml.collect_host({})
    assert host is None
    assert [(f.code, f.severity) for f in findings] == [("RM001", Severity.WARNING)]
    assert "libnvidia-ml.so.1" in findings[0].detail
    with pytest.raises(nvml.NvmlError) as info:
        nvml.nvml_call("nvmlDeviceGetCount")
    assert info.value.code == "LibraryNotFound"


def test_driver_not_loaded_is_absent_too(fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_DRIVER_NOT_LOADED)
    _, findings = nvml.collect_host({})
    assert findings[0].code == "RM001"


def test_pynvml_not_installed(fake_nvml, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    ok, reason = nvml.nvml_available()
    assert not ok and "nvidia-ml-py" in reason
    _, findings = nvml.collect_host({})
    assert findings[0].code == "RM001"


def test_mig_devices_with_uuids_and_ids(fake_nvml) -> None:
    migs = [(f"MIG-{i}aaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", 7 + i, 0) for i in range(3)]
    fake_nvml([FakeGpu("GPU-11111111-2222-3333-4444-555555555555", "00000000:07:00.0", mig=migs)])
    host, findings = nvml.collect_host({})
    assert host is not None and findings == []
    gpu = host.gpus[0]
    assert gpu.mig_mode
    assert [(m.uuid, m.gi, m.ci) for m in gpu.mig_devices] == migs
    assert gpu.mig_devices[0].memory_mib == 5120


def test_unknown_function_and_unknown_error(fake_nvml) -> None:
    fake_nvml(fail={("nvmlDeviceGetCount", None): pynvml.NVML_ERROR_UNKNOWN})
    with pytest.raises(nvml.NvmlError, match="nvmlNoSuchThing"):
        nvml.nvml_call("nvmlNoSuchThing")
    host, findings = nvml.collect_host({})
    assert host is not None and host.gpus == ()
    assert "cannot count" in findings[0].title
