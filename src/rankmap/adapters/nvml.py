"""The one NVML gateway: every pynvml call of rankmap goes through :func:`nvml_call`.

* ``nvmlInit`` runs lazily, once, on the first call (and never at import).
* Every ``NVMLError`` becomes :class:`NvmlError` with a sentence saying what it means and what to
  do (NotSupported / NoPermission / GpuIsLost / DriverNotLoaded / LibraryNotFound / driver-library
  mismatch ...). A diagnoser says why a value is missing (style.md, pitfall 8).
* :func:`collect_host` degrades per field and per GPU: one lost GPU does not sink the rest.
* Strings may come back as ``str`` (current nvidia-ml-py) or ``bytes`` (old releases); both are
  decoded (reference/cuda_devices.md §5.1).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from dataclasses import replace
from types import ModuleType
from typing import Any

from rankmap.findings import Finding, Severity, finding
from rankmap.model import Gpu, GpuProcess, Host, MigDevice

MIB = 1024 * 1024

# NVML return code -> (short code, explanation). Codes from nvml.h / pynvml NVML_ERROR_*.
_REASONS: dict[int, tuple[str, str]] = {
    1: ("Uninitialized", "NVML was not initialised"),
    2: ("InvalidArgument", "NVML rejected an argument (a GPU index or handle that does not exist)"),
    3: ("NotSupported", "not supported by this GPU or driver"),
    4: ("NoPermission", "no permission: the user may not query this (check /dev/nvidia* access)"),
    6: ("NotFound", "not found"),
    7: ("InsufficientSize", "NVML buffer too small (nvidia-ml-py older than the driver?)"),
    8: ("InsufficientPower", "the GPU's external power cables are not attached properly"),
    9: (
        "DriverNotLoaded",
        "the NVIDIA kernel driver is not loaded (no GPU driver on this machine)",
    ),
    10: ("Timeout", "NVML timed out talking to the GPU"),
    11: ("IrqIssue", "the NVIDIA kernel driver reports an interrupt problem with the GPU"),
    12: (
        "LibraryNotFound",
        "libnvidia-ml.so.1 was not found (no NVIDIA driver installed here, or a container started "
        "without the `utility` driver capability)",
    ),
    13: ("FunctionNotFound", "this driver's NVML lacks the function (driver older than the call)"),
    14: ("CorruptedInforom", "the GPU's infoROM is corrupted"),
    15: (
        "GpuIsLost",
        "the GPU has fallen off the bus or is otherwise inaccessible (check `dmesg` for Xid 79; "
        "reset it with `nvidia-smi -r` or reboot)",
    ),
    16: ("ResetRequired", "the GPU needs a reset before it can be used again"),
    17: ("OperatingSystem", "the operating system blocked the NVML call"),
    18: (
        "LibRmVersionMismatch",
        "driver/library version mismatch: the loaded kernel module and libnvidia-ml.so differ "
        "(the driver was upgraded without a reboot or a module reload)",
    ),
    19: ("InUse", "the GPU is in use"),
    20: ("Memory", "NVML ran out of memory"),
    21: ("NoData", "no data"),
    999: ("Unknown", "NVML reported an unknown error"),
}
# Init failures that mean "there is no NVML here" (RM001) rather than "NVML is broken" (RM002).
ABSENT_CODES = frozenset({"LibraryNotFound", "DriverNotLoaded", "NotInstalled"})

_lock = threading.Lock()
_state: dict[str, Any] = {"initialized": False, "error": None}


class NvmlError(Exception):
    """An NVML failure with an explained ``reason`` and a short ``code`` (``GpuIsLost``...)."""

    def __init__(self, reason: str, code: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code


def _pynvml() -> ModuleType:
    try:
        import pynvml
    except ImportError:
        raise NvmlError(
            "the Python package nvidia-ml-py (module pynvml) is not installed", "NotInstalled"
        ) from None
    module: ModuleType = pynvml
    return module


def explain(exc: BaseException, what: str = "") -> NvmlError:
    """Turn a pynvml ``NVMLError`` (or anything) into an :class:`NvmlError`."""
    if isinstance(exc, NvmlError):
        return exc
    value = getattr(exc, "value", None)
    code, text = _REASONS.get(value, ("Unknown", "")) if isinstance(value, int) else ("", "")
    if not code:
        code, text = type(exc).__name__, str(exc) or type(exc).__name__
    elif not text or code == "Unknown":
        text = f"{text or 'NVML error'} ({exc})"
    prefix = f"{what}: " if what else ""
    return NvmlError(f"{prefix}{code} - {text}", code)


def _ensure_init() -> ModuleType:
    module = _pynvml()
    with _lock:
        if _state["initialized"]:
            return module
        if _state["error"] is not None:
            raise _state["error"]
        try:
            module.nvmlInit()
        except Exception as exc:  # noqa: BLE001 - every NVMLError becomes an explained reason
            err = explain(exc, "nvmlInit")
            _state["error"] = err
            raise err from None
        _state["initialized"] = True
    return module


def reset() -> None:
    """Forget the init state (and shut NVML down if it was up); tests call it between scenarios."""
    with _lock:
        if _state["initialized"]:
            with contextlib.suppress(Exception):  # shutting down; nothing to report
                _pynvml().nvmlShutdown()
        _state["initialized"] = False
        _state["error"] = None


def nvml_call(name: str, *args: Any) -> Any:
    """``pynvml.<name>(*args)`` after a lazy ``nvmlInit``; raises :class:`NvmlError`."""
    module = _ensure_init()
    func = getattr(module, name, None)
    if func is None:
        raise NvmlError(f"{name}: this nvidia-ml-py has no such function", "FunctionNotFound")
    try:
        return func(*args)
    except Exception as exc:  # noqa: BLE001
        raise explain(exc, name) from None


def nvml_available() -> tuple[bool, str]:
    """(True, "") when NVML initialises; else (False, the reason)."""
    try:
        _ensure_init()
    except NvmlError as exc:
        return False, exc.reason
    return True, ""


def text(value: Any) -> str:
    """NVML strings: ``str`` in current nvidia-ml-py, ``bytes`` in old releases."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace").rstrip("\x00")
    return str(value)


def decode_cuda_version(value: int) -> str:
    """``12020`` -> ``"12.2"`` (major ``v // 1000``, minor ``(v % 1000) // 10``, as nvitop)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def collect_host(environ: Mapping[str, str]) -> tuple[Host | None, list[Finding]]:
    """This machine through NVML, identity via adapters/system.py.

    ``(None, [RM001])`` when NVML is absent; ``(None, [RM002])`` when it is present but cannot
    initialise (mismatch, permission); per-GPU failures give RM002 findings and a GPU entry whose
    ``errors`` say what is missing - the rest of the inventory stays intact.
    """
    from rankmap.adapters.system import collect_host_identity

    try:
        _ensure_init()
    except NvmlError as exc:
        return None, [_init_finding(exc)]
    findings: list[Finding] = []
    identity = collect_host_identity(environ)
    hostname = identity.hostname or "localhost"
    driver = _optional("nvmlSystemGetDriverVersion", findings, hostname)
    cuda = _cuda_driver_version(findings, hostname)
    nvml_version = _optional("nvmlSystemGetNVMLVersion", findings, hostname)
    try:
        count = int(nvml_call("nvmlDeviceGetCount"))
    except NvmlError as exc:
        findings.append(
            finding("RM002", f"NVML cannot count the GPUs: {exc.reason}", hosts=[hostname])
        )
        count = 0
    gpus = []
    for index in range(count):
        gpu = collect_gpu(index)
        gpus.append(gpu)
        if gpu.errors:
            findings.append(_gpu_finding(gpu, hostname))
    host = Host(
        hostname=hostname,
        gpus=tuple(gpus),
        identity=identity,
        driver_version=text(driver) if driver is not None else None,
        cuda_driver_version=cuda,
        nvml_version=text(nvml_version) if nvml_version is not None else None,
        # Inside a container NVML sees only the injected GPUs, renumbered from 0.
        view="container" if identity.container else "host",
        source="nvml",
    )
    return host, findings


def _init_finding(exc: NvmlError) -> Finding:
    if exc.code in ABSENT_CODES:
        return finding(
            "RM001",
            f"NVML is not available ({exc.code})",
            detail=f"{exc.reason}. GPU inventory and the logical -> physical view are not shown; "
            "everything else is.",
        )
    return finding(
        "RM002",
        f"NVML is present but failed to initialise ({exc.code})",
        detail=exc.reason,
        severity=Severity.ERROR if exc.code == "LibRmVersionMismatch" else None,
    )


def _optional(name: str, findings: list[Finding], hostname: str) -> Any:
    try:
        return nvml_call(name)
    except NvmlError as exc:
        if exc.code != "NotSupported":
            findings.append(finding("RM002", f"NVML {name} failed", detail=exc.reason))
        return None


def _cuda_driver_version(findings: list[Finding], hostname: str) -> str | None:
    last = NvmlError("not queried", "NotSupported")
    for name in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        try:
            return decode_cuda_version(int(nvml_call(name)))
        except NvmlError as exc:
            last = exc
    if last.code not in ("NotSupported", "FunctionNotFound"):
        findings.append(
            finding("RM002", "NVML cannot report the CUDA driver version", detail=last.reason)
        )
    return None


def _gpu_finding(gpu: Gpu, hostname: str) -> Finding:
    where = f"GPU {gpu.nvml_index}" + (f" ({gpu.pci_bus_id})" if gpu.pci_bus_id else "")
    only_unsupported = all("NotSupported" in e for e in gpu.errors)
    return finding(
        "RM002",
        f"{where}: NVML could not read {len(gpu.errors)} field(s)",
        detail="; ".join(gpu.errors),
        devices=[gpu.pci_bus_id or gpu.uuid],
        hosts=[hostname],
        severity=Severity.INFO if only_unsupported else None,
    )


def collect_gpu(index: int) -> Gpu:
    """One GPU by NVML index; every failed field is recorded in ``Gpu.errors``."""
    from rankmap.inventory.smi_common import UNKNOWN_UUID_PREFIX
    from rankmap.pci import try_normalize_bus_id

    errors: list[str] = []

    def get(field: str, name: str, *args: Any, quiet: tuple[str, ...] = ()) -> Any:
        try:
            return nvml_call(name, *args)
        except NvmlError as exc:
            if exc.code not in quiet:
                errors.append(f"{field}: {exc.reason.split(': ', 1)[-1]}")
            return None

    handle = get("handle", "nvmlDeviceGetHandleByIndex", index)
    placeholder = Gpu(nvml_index=index, uuid=f"{UNKNOWN_UUID_PREFIX}nvml{index}", pci_bus_id=None)
    if handle is None:
        return replace(placeholder, errors=tuple(errors))
    uuid = get("uuid", "nvmlDeviceGetUUID", handle)
    pci = get("pci_bus_id", "nvmlDeviceGetPciInfo", handle)
    bus = try_normalize_bus_id(text(pci.busId)) if pci is not None else None
    name = get("name", "nvmlDeviceGetName", handle)
    memory = get("memory", "nvmlDeviceGetMemoryInfo", handle)
    cc = get("compute_capability", "nvmlDeviceGetCudaComputeCapability", handle)
    minor = get("minor_number", "nvmlDeviceGetMinorNumber", handle, quiet=("NotSupported",))
    mig = get("mig_mode", "nvmlDeviceGetMigMode", handle, quiet=("NotSupported",))
    mig_on = bool(mig) and int(mig[0]) == 1
    return Gpu(
        nvml_index=index,
        uuid=text(uuid) if uuid is not None else placeholder.uuid,
        pci_bus_id=bus,
        name=text(name) if name is not None else None,
        memory_mib=int(memory.total) // MIB if memory is not None else None,
        compute_capability=f"{cc[0]}.{cc[1]}" if cc is not None else None,
        mig_mode=mig_on,
        mig_devices=_mig_devices(handle, get) if mig_on else (),
        minor_number=int(minor) if minor is not None else None,
        processes=_processes(handle, get),
        errors=tuple(errors),
    )


def _mig_devices(handle: Any, get: Any) -> tuple[MigDevice, ...]:
    count = get("mig_devices", "nvmlDeviceGetMaxMigDeviceCount", handle) or 0
    out = []
    for i in range(int(count)):
        try:
            mig = nvml_call("nvmlDeviceGetMigDeviceHandleByIndex", handle, i)
        except NvmlError:
            continue  # empty slot (NotFound) - MIG slots need not be filled
        uuid = get(f"mig[{i}].uuid", "nvmlDeviceGetUUID", mig)
        if uuid is None:
            continue
        memory = get(f"mig[{i}].memory", "nvmlDeviceGetMemoryInfo", mig, quiet=("NotSupported",))
        gi = get(f"mig[{i}].gi", "nvmlDeviceGetGpuInstanceId", mig)
        ci = get(f"mig[{i}].ci", "nvmlDeviceGetComputeInstanceId", mig)
        out.append(
            MigDevice(
                uuid=text(uuid),
                gi=int(gi) if gi is not None else None,
                ci=int(ci) if ci is not None else None,
                index=i,
                memory_mib=int(memory.total) // MIB if memory is not None else None,
            )
        )
    return tuple(out)


def _processes(handle: Any, get: Any) -> tuple[GpuProcess, ...] | None:
    procs = get("processes", "nvmlDeviceGetComputeRunningProcesses", handle)
    if procs is None:
        return None
    out = []
    for p in procs:
        try:
            name: str | None = text(nvml_call("nvmlSystemGetProcessName", p.pid))
        except NvmlError:
            name = None  # another user's process or another PID namespace
        used = getattr(p, "usedGpuMemory", None)
        out.append(
            GpuProcess(
                pid=int(p.pid),
                name=name,
                used_memory_mib=int(used) // MIB if isinstance(used, int) else None,
            )
        )
    return tuple(out)
