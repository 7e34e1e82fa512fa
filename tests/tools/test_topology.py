"""Topology model, nvidia-smi topo -m parsing, profile topologies and topology findings."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from rankmap.adapters.nvml_topology import collect_topology
from rankmap.errors import InputError
from rankmap.inventory import builtin_profiles, load_machine
from rankmap.inventory.topo_smi import parse_topo_matrix
from rankmap.model import Host, Placement
from rankmap.topology import (
    format_cpu_list,
    host_topology,
    link_rank,
    normalize_link,
    parse_cpu_list,
    parse_topology,
)
from rankmap.topology.rules import topology_findings

Load = Callable[[str], Host]


def test_link_order_follows_legend() -> None:
    order = ["X", "NV18", "NV4", "PIX", "PXB", "PHB", "NODE", "SYS"]
    assert sorted(order, key=link_rank) == order
    assert normalize_link(" X ") == "X"
    assert normalize_link("SOC") == "SYS"
    with pytest.raises(ValueError):
        normalize_link("FAST")


def test_cpu_lists_round_trip() -> None:
    assert parse_cpu_list("0-3,8,10-11") == (0, 1, 2, 3, 8, 10, 11)
    assert format_cpu_list([11, 0, 1, 2, 3, 8, 10]) == "0-3,8,10-11"
    with pytest.raises(ValueError):
        parse_cpu_list("5-2")


def test_every_builtin_profile_has_a_valid_topology() -> None:
    for profile in builtin_profiles():
        for host in load_machine(profile.name):
            topo = host_topology(host)
            assert topo is not None, profile.name
            assert [g.nvml_index for g in topo.gpus] == [g.nvml_index for g in host.gpus]
            assert [g.pci_bus_id for g in topo.gpus] == [g.pci_bus_id for g in host.gpus]
            n = len(topo.labels)
            assert all(topo.matrix[i][i] == "X" for i in range(n))
            assert all(topo.matrix[i][j] == topo.matrix[j][i] for i in range(n) for j in range(n))


def test_dgx_profiles_are_all_to_all_nvlink(machine: Load) -> None:
    h100 = host_topology(machine("dgx-h100"))
    a100 = host_topology(machine("dgx-a100"))
    assert h100 is not None and a100 is not None
    assert {h100.gpu_link(a, b) for a in range(8) for b in range(8) if a != b} == {"NV18"}
    assert {a100.gpu_link(a, b) for a in range(8) for b in range(8) if a != b} == {"NV12"}
    assert h100.gpu(0).numa_node == 0 and h100.gpu(7).numa_node == 1  # type: ignore[union-attr]


def test_workstation_is_split_across_two_sockets(machine: Load) -> None:
    topo = host_topology(machine("workstation-4gpu"))
    assert topo is not None
    assert topo.gpu_link(0, 1) == "PHB" and topo.gpu_link(2, 3) == "PHB"
    assert topo.gpu_link(1, 2) == "SYS"
    assert not topo.has_nvlink()


def test_to_dict_round_trips(machine: Load) -> None:
    topo = host_topology(machine("dgx-a100"))
    assert topo is not None
    assert parse_topology(topo.to_dict()) == topo


@pytest.mark.parametrize(
    "doc",
    [[], {"labels": "GPU0"}, {"labels": ["GPU0"], "matrix": [["X", "X"]]},
     {"labels": ["GPU0", "GPU1"], "matrix": [["X", "FAST"], ["FAST", "X"]]}],
)  # fmt: skip
def test_malformed_topology_is_input_error(doc: Any) -> None:
    with pytest.raises(InputError):
        parse_topology(doc)


def test_parse_topo_m_with_nics_and_numa(jobs: Path) -> None:
    topo = parse_topo_matrix((jobs / "topo_h800.txt").read_text())
    assert topo.labels[:2] == ("GPU0", "GPU1") and topo.labels[-2:] == ("NIC0", "NIC1")
    assert topo.gpu_link(0, 7) == "NV8"
    assert topo.link("GPU4", "NIC1") == "PIX"
    assert topo.gpu(4).cpu_affinity == "48-95,144-191"  # type: ignore[union-attr]
    assert topo.gpu(4).numa_node == 1  # type: ignore[union-attr]
    assert [n.device for n in topo.nics] == ["mlx5_0", "mlx5_1"]


def test_parse_topo_m_pcie_pair_and_old_driver(jobs: Path) -> None:
    pair = parse_topo_matrix((jobs / "topo_2gpu_pcie.txt").read_text())
    assert pair.gpu_link(0, 1) == "PHB" and pair.gpu(1).numa_node == 0  # type: ignore[union-attr]
    old = parse_topo_matrix((jobs / "topo_old_driver.txt").read_text())
    assert old.gpu_link(0, 1) == "SYS"  # SOC
    assert old.nics[0].device == "mlx5_0"
    assert old.gpu(1).cpu_affinity == "12-23"  # type: ignore[union-attr]


def test_parse_topo_m_survives_tabs_turned_into_spaces(jobs: Path) -> None:
    text = (jobs / "topo_h800.txt").read_text().replace("\t", "    ")
    assert parse_topo_matrix(text).gpu_link(3, 4) == "NV8"


@pytest.mark.parametrize("text", ["", "hello\nworld", "\tGPU0\tGPU1\nGPU0\t X \tPHB\n", "\x00\x01"])
def test_parse_topo_m_rejects_garbage(text: str) -> None:
    with pytest.raises(InputError):
        parse_topo_matrix(text)


def _placements(host: str, gpus: list[int]) -> list[Placement]:
    return [
        Placement(rank=i, local_rank=i, node=host, cuda_index=i, nvml_index=g)
        for i, g in enumerate(gpus)
    ]


def test_job_across_sockets_gets_rm990(machine: Load) -> None:
    ws = machine("workstation-4gpu")
    found = topology_findings(ws, _placements("ws-01", [1, 2]))
    assert [f.code for f in found] == ["RM990"]
    assert found[0].ranks == (0, 1)
    assert "CUDA_VISIBLE_DEVICES=0,1" in found[0].fix
    assert found[0].devices == ("0000:52:00.0", "0000:56:00.0")
    assert topology_findings(ws, _placements("ws-01", [0, 1])) == []
    assert topology_findings(ws, _placements("ws-01", [0, 1, 2, 3])) == []  # no better choice
    assert topology_findings(ws, _placements("other-node", [1, 2])) == []


def test_all_to_all_nvlink_never_complains(machine: Load) -> None:
    assert topology_findings(machine("dgx-h100"), _placements("dgx-h100-01", [0, 7])) == []


def _bridged_pairs(ws: Host) -> Host:
    """The workstation with NVLink bridges on GPU 0-1 and 2-3 (NV4), all on one socket."""
    doc = host_topology(ws).to_dict()  # type: ignore[union-attr]
    doc["matrix"] = [
        ["X", "NV4", "PHB", "PHB", "PHB"],
        ["NV4", "X", "PHB", "PHB", "PHB"],
        ["PHB", "PHB", "X", "NV4", "PHB"],
        ["PHB", "PHB", "NV4", "X", "PHB"],
        ["PHB", "PHB", "PHB", "PHB", "X"],
    ]
    doc["gpus"][3]["nvlink"] = {"generation": 3, "links": 4, "active": 2}
    return replace(ws, topology=doc)


def test_nvlink_unused_gets_rm991_and_links_down_rm992(machine: Load) -> None:
    host = _bridged_pairs(machine("workstation-4gpu"))
    found = topology_findings(host, _placements("ws-01", [1, 2]))
    assert [f.code for f in found] == ["RM991"]
    assert "CUDA_VISIBLE_DEVICES=0,1" in found[0].fix
    down = topology_findings(host, _placements("ws-01", [2, 3]))
    assert [f.code for f in down] == ["RM992"]
    assert "2 of 4" in down[0].title
    assert [f.code for f in topology_findings(host)] == ["RM992"]  # host-level, no job


def test_host_without_topology_has_no_findings(machine: Load) -> None:
    ws = replace(machine("workstation-4gpu"), topology=None)
    assert topology_findings(ws, _placements("ws-01", [1, 2])) == []


class FakeNvml:
    """A fake at our port (the nvml_call gateway): 4 GPUs, NVLink pairs 0-1 and 2-3 (2 links)."""

    buses = ["00000000:4F:00.0", "00000000:52:00.0", "00000000:56:00.0", "00000000:57:00.0"]
    peer = {0: 1, 1: 0, 2: 3, 3: 2}

    class _Pci:
        def __init__(self, bus: str) -> None:
            self.busId = bus

    def __call__(self, name: str, *args: Any) -> Any:
        if name == "nvmlDeviceGetCount":
            return 4
        if name in ("nvmlDeviceGetHandleByIndex",):
            return args[0]
        if name == "nvmlDeviceGetPciInfo":
            return self._Pci(self.buses[args[0]])
        if name == "nvmlDeviceGetNvLinkState":
            if args[1] >= 2:
                raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")
            return 1
        if name == "nvmlDeviceGetNvLinkRemotePciInfo":
            return self._Pci(self.buses[self.peer[args[0]]])
        if name == "nvmlDeviceGetNvLinkVersion":
            return 3
        if name == "nvmlDeviceGetTopologyCommonAncestor":
            return 30 if (args[0] < 2) == (args[1] < 2) else 50
        if name == "nvmlDeviceGetNumaNodeId":
            return args[0] // 2
        if name == "nvmlDeviceGetCpuAffinity":
            return [0xFF] if args[0] < 2 else [0xFF00]
        if name == "nvmlDeviceGetCurrPcieLinkGeneration":
            return 4
        if name == "nvmlDeviceGetCurrPcieLinkWidth":
            return 16
        raise RuntimeError(f"NotSupported: {name}")


def test_nvml_topology_through_the_gateway() -> None:
    topo = collect_topology(FakeNvml())
    assert topo.source == "nvml"
    assert topo.gpu_link(0, 1) == "NV2" and topo.gpu_link(2, 3) == "NV2"
    assert topo.gpu_link(0, 2) == "SYS" and topo.gpu_link(0, 3) == "SYS"
    g2 = topo.gpu(2)
    assert g2 is not None and g2.cpu_affinity == "8-15" and g2.numa_node == 1
    assert g2.pci_bus_id == "0000:56:00.0"
    assert g2.nvlink is not None and (g2.nvlink.generation, g2.nvlink.active) == (3, 2)


def test_one_machine_split_into_two_nccl_hosts_gets_rm803(machine: Load) -> None:
    from rankmap.model import HostIdentity
    from rankmap.topology.rules import split_machine_findings

    dgx = machine("dgx-h100")
    pod_a = replace(dgx, hostname="pod-a", identity=HostIdentity("pod-a", boot_id="b00t"))
    pod_b = replace(dgx, hostname="pod-b", identity=HostIdentity("pod-b", boot_id="b00t"))
    placements = [
        Placement(0, 0, "pod-a", 0, 0, dgx.gpus[0].uuid, dgx.gpus[0].pci_bus_id),
        Placement(1, 0, "pod-b", 0, 1, dgx.gpus[1].uuid, dgx.gpus[1].pci_bus_id),
    ]
    found = split_machine_findings([pod_a, pod_b], placements)
    assert [f.code for f in found] == ["RM803"]
    assert found[0].ranks == (0, 1) and found[0].hosts == ("pod-a", "pod-b")
    assert "NV18" in found[0].detail
    other = replace(pod_b, identity=HostIdentity("pod-b", boot_id="another-boot"))
    assert split_machine_findings([pod_a, other], placements) == []
    same = replace(pod_b, identity=HostIdentity("pod-b", boot_id="b00t", nccl_hostid="x"))
    same_a = replace(pod_a, identity=HostIdentity("pod-a", boot_id="b00t", nccl_hostid="x"))
    assert split_machine_findings([same_a, same], placements) == []  # one NCCL host: fine
