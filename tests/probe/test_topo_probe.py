"""`rankmap probe` with topology: records carry their machine's topology in the per-node shared
part, rank 0 adds RM990 (ranks across sockets) and names the NVLink a split machine leaves
unused (RM803). Records come from ``collect_record`` with a profile standing in for NVML."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from rankmap.adapters.rank_record import collect_record, machine_topology
from rankmap.inventory import load_machine
from rankmap.probe.collate import collate, collate_raw
from rankmap.probe.record import RankRecord
from rankmap.probe.wire import encode
from rankmap.topology import host_topology
from rankmap.topology.wire import from_wire, to_wire

SPLIT = str(Path(__file__).parents[1] / "data" / "topo" / "split-dgx.json")


def records(n: int, machine: str, per_node: int, **env: str) -> list[RankRecord]:
    out = []
    for rank in range(n):
        renv = {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank % per_node),
            "WORLD_SIZE": str(n),
            "LOCAL_WORLD_SIZE": str(per_node),
            "GROUP_RANK": str(rank // per_node),
            **env,
        }
        out.append(collect_record(renv, machine=machine))
    return out


def through_store(recs: list[RankRecord]) -> tuple[list[bytes], dict[str, bytes]]:
    owns, shared = [], {}
    for r in recs:
        own, blob, digest = encode(r)
        owns.append(own)
        shared[digest] = blob
    return owns, shared


def test_ranks_across_sockets_on_workstation() -> None:
    recs = records(2, "workstation-4gpu", 2, CUDA_VISIBLE_DEVICES="0,2")
    assert all(r.topology and r.topology.startswith("t1|") for r in recs)
    owns, shared = through_store(recs)
    assert len(shared) == 1  # the topology rides in the one per-node shared part
    report = collate_raw(owns, shared, world_size=2)
    (rm990,) = [f for f in report.findings if f.code == "RM990"]
    assert rm990.severity.value == "warning"
    assert rm990.ranks == (0, 1)
    assert rm990.devices == ("0000:4F:00.0", "0000:56:00.0")
    assert "CUDA_VISIBLE_DEVICES=0,1" in rm990.fix
    assert report.verdict == "warning"


def test_socket_local_ranks_are_clean() -> None:
    report = collate(records(2, "workstation-4gpu", 2, CUDA_VISIBLE_DEVICES="0,1"), world_size=2)
    assert not {"RM990", "RM991", "RM992"} & {f.code for f in report.findings}


def test_split_machine_names_unused_nvlink() -> None:
    recs = records(8, SPLIT, 4)
    assert {r.hostname for r in recs} == {"pod-a", "pod-b"}
    assert len({r.boot_id for r in recs}) == 1
    owns, shared = through_store(recs)
    report = collate_raw(owns, shared, world_size=8)
    (rm803,) = [f for f in report.findings if f.code == "RM803"]  # the generic one, enriched
    assert rm803.severity.value == "warning"
    assert rm803.hosts == ("pod-a", "pod-b")
    assert rm803.ranks == tuple(range(8))
    assert "NVLink between their GPUs is unused" in rm803.title
    assert "joined by NV18" in rm803.detail
    assert not report.has_errors


def test_split_machine_without_topology_keeps_generic_finding() -> None:
    recs = [replace(r, topology=None) for r in records(8, SPLIT, 4)]
    (rm803,) = [f for f in collate(recs, world_size=8).findings if f.code == "RM803"]
    assert "NVLink" not in rm803.title


def test_many_alike_nodes_one_finding() -> None:
    base = records(2, "workstation-4gpu", 2, CUDA_VISIBLE_DEVICES="0,2")
    recs = [
        replace(r, rank=node * 2 + r.rank, hostname=f"ws-{node:02d}", boot_id=f"boot-{node}")
        for node in range(50)
        for r in base
    ]
    (rm990,) = [f for f in collate(recs, world_size=100).findings if f.code == "RM990"]
    assert "49 more nodes" in rm990.title
    assert rm990.ranks == tuple(range(100))


def test_garbled_topology_is_ignored() -> None:
    recs = [replace(r, topology="t1|junk") for r in records(2, "workstation-4gpu", 2)]
    report = collate(recs, world_size=2)
    assert "RM990" not in {f.code for f in report.findings}


@pytest.mark.parametrize("name", ["dgx-h100", "dgx-a100", "workstation-4gpu", "mixed-2gpu"])
def test_wire_round_trip(name: str) -> None:
    topo = host_topology(load_machine(name)[0])
    assert topo is not None
    text = to_wire(topo)
    assert text is not None and len(text) < 600
    back = from_wire(text)
    for a in topo.gpus:
        for b in topo.gpus:
            assert back.gpu_link(a.nvml_index, b.nvml_index) == topo.gpu_link(
                a.nvml_index, b.nvml_index
            )
        loc = back.gpu(a.nvml_index)
        assert loc is not None and loc.pci_bus_id == a.pci_bus_id
        assert loc.numa_node == a.numa_node and loc.nvlink == a.nvlink


def test_topology_collection_never_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # this machine's NVML (absent here, present on a GPU node): text or unknown, never raises
    text = machine_topology(None, "nvml", None, None)
    assert text is None or text.startswith("t1|")
    import rankmap.adapters.nvml_topology as port

    def broken() -> None:
        raise RuntimeError("driver fell over")

    monkeypatch.setattr(port, "collect_topology", broken)
    assert machine_topology(None, "cuda+nvml", None, None) is None
    assert machine_topology("no-such-profile", "profile", None, None) is None
    assert machine_topology(None, "none", None, None) is None
    rec = collect_record({"RANK": "0", "WORLD_SIZE": "1"}, machine="cloud-vm-1gpu")
    assert rec.topology is not None and from_wire(rec.topology).gpus[0].nvml_index == 0


def test_pod_seeing_only_far_gpus_gets_no_impossible_fix(tmp_path: Path) -> None:
    from rankmap.inventory.profile import dump_profile
    from rankmap.model import Inventory

    ws = load_machine("workstation-4gpu")[0]
    gpus = tuple(replace(g, nvml_index=i) for i, g in enumerate((ws.gpus[0], ws.gpus[2])))
    path = tmp_path / "ws-pod.json"
    path.write_text(dump_profile(Inventory((replace(ws, gpus=gpus, view="container"),))))
    report = collate(records(2, str(path), 2), world_size=2)
    assert sorted(p.pci_bus_id or "" for p in report.placements) == ["0000:4F:00.0", "0000:56:00.0"]
    assert "RM990" not in {f.code for f in report.findings}


def test_split_machine_two_profiles_one_per_node() -> None:
    # each pod's ranks run with their own RANKMAP_MACHINE (pod-a.json / pod-b.json, one boot_id)
    pods = Path(SPLIT).parent
    recs = [
        replace(r, rank=r.rank + 4 * node, world_size=8, node_rank=node)
        for node, pod in enumerate(("pod-a", "pod-b"))
        for r in records(4, str(pods / f"{pod}.json"), 4)
    ]
    assert [r.hostname for r in recs] == ["pod-a"] * 4 + ["pod-b"] * 4
    owns, shared = through_store(recs)
    assert len(shared) == 2  # one shared part (with its topology) per pod
    report = collate_raw(owns, shared, world_size=8)
    (rm803,) = [f for f in report.findings if f.code == "RM803"]
    assert "NVLink between their GPUs is unused" in rm803.title
    assert rm803.hosts == ("pod-a", "pod-b")
