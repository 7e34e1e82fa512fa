"""One rank's record from this process: environment, host identity, interfaces, device, topology.

The record type and its wire forms are pure (:mod:`rankmap.probe.record`); this is where they are
filled in from the outside world (``socket``, NVML, torch, ``/proc``, the profile file).
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rankmap.errors import InputError
from rankmap.probe.launch_env import parse_rank_env
from rankmap.probe.record import RankRecord, probe_env

if TYPE_CHECKING:
    from rankmap.adapters.device import DeviceFacts
    from rankmap.model import HostIdentity
    from rankmap.probe.launch_env import RankEnv


def interface_names() -> tuple[str, ...] | None:
    """Network interfaces of this network namespace (``socket.if_nameindex``)."""
    try:
        return tuple(name for _, name in socket.if_nameindex())
    except OSError:
        return None


def interface_addresses(names: tuple[str, ...] | None) -> tuple[str, ...]:
    """IPv4 address of each interface (Linux SIOCGIFADDR); empty where unsupported."""
    if not names:
        return ()
    try:
        import fcntl
        import struct
    except ImportError:
        return ()
    out: list[str] = []
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for name in names:
            try:
                packed = fcntl.ioctl(sock.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            out.append(f"{name}={socket.inet_ntoa(packed[20:24])}")
    return tuple(out)


def collect_record(
    environ: Mapping[str, str],
    *,
    device: Any = None,
    machine: str | None = None,
    allow_cuda_init: bool = False,
) -> RankRecord:
    """This rank's record. ``machine`` (or ``RANKMAP_MACHINE``) stands in for NVML and CUDA.

    ``allow_cuda_init``: the CLI probe is its own process and may initialise CUDA to ask it
    directly; ``verify()`` never initialises CUDA itself (see :mod:`rankmap.adapters.device`).
    """
    from rankmap.adapters.system import collect_host_identity
    from rankmap.version import __version__

    start = time.perf_counter()
    renv = parse_rank_env(environ)
    identity = collect_host_identity(environ)
    spec = machine or environ.get("RANKMAP_MACHINE") or None
    dev = _device(environ, renv, identity, device, machine, spec, allow_cuda_init)
    names = interface_names()
    ident = dev.identity or identity
    topology = machine_topology(spec, dev.source, identity.hostname, renv.node_rank)
    return RankRecord(
        rank=renv.rank,
        world_size=renv.world_size,
        local_rank=renv.local_rank,
        local_world_size=renv.local_world_size,
        node_rank=renv.node_rank,
        launcher=renv.launcher,
        pid=os.getpid(),
        hostname=ident.hostname,
        boot_id=ident.boot_id,
        machine_id=ident.machine_id,
        nccl_hostid=environ.get("NCCL_HOSTID") or None,
        container=ident.container,
        container_id=ident.container_id,
        identity_source=dev.identity_source,
        addresses=interface_addresses(names),
        cuda_visible_devices=environ.get("CUDA_VISIBLE_DEVICES"),
        cuda_device_order=environ.get("CUDA_DEVICE_ORDER"),
        nvidia_visible_devices=environ.get("NVIDIA_VISIBLE_DEVICES"),
        visible_uuids=dev.visible_uuids,
        cuda_index=dev.cuda_index,
        device_selected_by=dev.selected_by,
        uuid=dev.uuid,
        pci_bus_id=dev.pci_bus_id,
        nvml_index=dev.nvml_index,
        mig_parent_uuid=dev.mig_parent_uuid,
        gpu_name=dev.gpu_name,
        device_error=dev.error,
        device_source=dev.source,
        device_notes=dev.notes,
        torch_version=dev.versions.get("torch"),
        cuda_version=dev.versions.get("cuda"),
        nccl_version=dev.versions.get("nccl"),
        driver_version=dev.versions.get("driver"),
        cuda_driver_version=dev.versions.get("cuda_driver"),
        rankmap_version=__version__,
        python_version=platform.python_version(),
        socket_ifname=environ.get("NCCL_SOCKET_IFNAME"),
        interfaces=names,
        env=probe_env(environ),
        problems=renv.problems + dev.problems,
        gpus=dev.gpus if renv.local_rank in (0, None) else None,
        probe_ms=round((time.perf_counter() - start) * 1000.0, 3),
        topology=topology,
    )


def _device(
    environ: Mapping[str, str],
    renv: RankEnv,
    identity: HostIdentity,
    device: Any,
    machine: str | None,
    spec: str | None,
    allow_cuda_init: bool,
) -> DeviceFacts:
    """This rank's device (:func:`rankmap.adapters.device.resolve_device`); a bad profile named
    by ``RANKMAP_MACHINE`` is reported under that name, not as a ``--machine`` never typed."""
    from rankmap.adapters.device import resolve_device

    try:
        return resolve_device(
            environ, renv, identity, device=device, machine=spec, allow_cuda_init=allow_cuda_init
        )
    except InputError as exc:
        if machine or not spec:
            raise
        raise InputError(
            exc.message.replace("--machine", "RANKMAP_MACHINE", 1), hint=exc.hint
        ) from None


def machine_topology(
    spec: str | None, device_source: str, hostname: str | None, node_rank: int | None
) -> str | None:
    """This machine's topology as compact text: from the profile standing in (the host that
    :func:`rankmap.adapters.device.pick_host` chose), else from NVML when the device came from it.

    Never raises: a topology is an extra, so any failure (NVML without topology support, a
    driver error, a malformed profile topology) leaves it unknown (``None``).
    """
    try:
        from rankmap.topology import host_topology
        from rankmap.topology.wire import to_wire

        if spec:
            from rankmap.adapters.device import pick_host
            from rankmap.adapters.files import LocalFiles
            from rankmap.inventory import load_machine

            topo = host_topology(pick_host(load_machine(spec, LocalFiles()), hostname, node_rank))
        elif "nvml" in device_source:
            from rankmap.adapters.nvml_topology import collect_topology

            topo = collect_topology()
        else:
            return None
        return to_wire(topo) if topo is not None else None
    except Exception:  # noqa: BLE001 - collecting topology must never fail the probe
        return None
