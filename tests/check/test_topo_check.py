"""`rankmap check` with topology: ranks across sockets (RM990), NVLink links down (RM992) and
one machine split into several NCCL hosts (RM803, two pod profiles sharing a boot_id)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from rankmap.adapters.local import check_launch, load_machine
from rankmap.findings import Report

TOPO = Path(__file__).parents[1] / "data" / "topo"
WS_GPU0, WS_GPU2 = "0000:4F:00.0", "0000:56:00.0"


def check(argv: list[str], machines: list[str], env: dict[str, str] | None = None) -> Report:
    hosts = [h for m in machines for h in load_machine(m)]
    return check_launch(argv, machines=hosts, env=env or {}, cwd=TOPO)


def codes(report: Report) -> list[str]:
    return [f.code for f in report.ordered_findings()]


def test_ranks_across_sockets_on_workstation() -> None:
    report = check(
        ["torchrun", "--nproc-per-node", "2", "train.py"],
        ["workstation-4gpu"],
        {"CUDA_VISIBLE_DEVICES": "0,2"},
    )
    (rm990,) = [f for f in report.findings if f.code == "RM990"]
    assert rm990.severity.value == "warning"
    assert rm990.ranks == (0, 1)
    assert rm990.devices == (WS_GPU0, WS_GPU2)
    assert rm990.hosts == ("ws-01",)
    assert "GPU 0-2: SYS" in rm990.detail and "NUMA 1" in rm990.detail
    assert "CUDA_VISIBLE_DEVICES=0,1" in rm990.fix
    assert report.verdict == "warning"  # a slow job, not a failing one


def test_socket_local_pair_is_clean() -> None:
    report = check(
        ["torchrun", "--nproc-per-node", "2", "train.py"],
        ["workstation-4gpu"],
        {"CUDA_VISIBLE_DEVICES": "2,3"},
    )
    assert not {"RM990", "RM991", "RM992"} & set(codes(report))


def test_all_gpus_in_use_is_clean() -> None:
    # every GPU of the machine: no closer set of 4 exists, nothing to suggest
    report = check(["torchrun", "--nproc-per-node", "4", "train.py"], ["workstation-4gpu"])
    assert "RM990" not in codes(report)


def test_cloned_nodes_give_one_finding_naming_all() -> None:
    report = check(
        ["torchrun", "--nnodes", "3", "--nproc-per-node", "2", "train.py"],
        ["workstation-4gpu"],
        {"CUDA_VISIBLE_DEVICES": "0,2"},
    )
    (rm990,) = [f for f in report.findings if f.code == "RM990"]
    assert len(rm990.hosts) == 3 and rm990.hosts[0] == "ws-01"
    assert rm990.ranks == tuple(range(6))
    assert "2 more nodes" in rm990.title


def test_root_cause_error_stays_first() -> None:
    # 4 processes on 2 visible GPUs across sockets: the mapping error leads, RM990 follows
    report = check(
        ["torchrun", "--nproc-per-node", "4", "train.py"],
        ["workstation-4gpu"],
        {"CUDA_VISIBLE_DEVICES": "0,2"},
    )
    doc = report.to_dict()
    assert doc["findings"][0]["severity"] == "error"
    assert doc["findings"][0]["code"] == "RM201"


def test_nvlink_links_down(tmp_path: Path) -> None:
    doc = json.loads((TOPO / "pod-a.json").read_text())
    host = doc["hosts"][0]
    host["topology"]["gpus"][1]["nvlink"]["active"] = 12
    path = tmp_path / "pod-a-degraded.json"
    path.write_text(json.dumps(doc))
    report = check(["torchrun", "--nproc-per-node", "4", "train.py"], [str(path)])
    (rm992,) = [f for f in report.findings if f.code == "RM992"]
    assert "12 of 18" in rm992.title and rm992.severity.value == "warning"
    assert rm992.devices == ("0000:2A:00.0",)


def test_split_machine_two_pods_same_boot_id() -> None:
    report = check(
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "4", "train.py"],
        [str(TOPO / "pod-a.json"), str(TOPO / "pod-b.json")],
    )
    (rm803,) = [f for f in report.findings if f.code == "RM803"]
    assert rm803.severity.value == "warning"
    assert rm803.hosts == ("pod-a", "pod-b")
    assert "NVLink between their GPUs is unused" in rm803.title
    assert "joined by NV18" in rm803.detail
    assert report.verdict == "warning"
    # each pod's ranks land on its own GPUs (container view: NVML indices renumbered)
    buses = {p.rank: p.pci_bus_id for p in report.placements}
    assert buses[0] == "0000:18:00.0" and buses[4] == "0000:9A:00.0"


def test_split_machine_same_nccl_hostid_is_one_host() -> None:
    report = check(
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "4", "train.py"],
        [str(TOPO / "pod-a.json"), str(TOPO / "pod-b.json")],
        {"NCCL_HOSTID": "dgx-h100-01"},
    )
    assert "RM803" not in codes(report)


def test_split_machine_sharing_a_gpu_is_named() -> None:
    a = load_machine(str(TOPO / "pod-a.json"))[0]
    b = replace(a, hostname="pod-b", identity=replace(a.identity, hostname="pod-b"))
    report = check_launch(
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "4", "train.py"],
        machines=[a, b],
        env={},
        cwd=TOPO,
    )
    (rm803,) = [f for f in report.findings if f.code == "RM803"]
    assert "share GPU 0000:18:00.0" in rm803.detail
    assert "NVLink" in rm803.title  # GPUs 0..3 are NV18 to each other across the two pods


def test_distinct_machines_are_no_split() -> None:
    report = check(["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train.py"], ["dgx-h100"])
    assert "RM803" not in codes(report)


def test_cli_two_pod_profiles(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        [
            "check",
            "--machine",
            str(TOPO / "pod-a.json"),
            "--machine",
            str(TOPO / "pod-b.json"),
            "--json",
            "--",
            "torchrun",
            "--nnodes",
            "2",
            "--nproc-per-node",
            "4",
            "train.py",
        ]
    )
    assert result.status == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "warning"
    assert [f["code"] for f in doc["findings"] if f["severity"] == "warning"] == ["RM803"]


def container_pair(tmp_path: Path) -> Path:
    """A pod that sees only GPUs 0 and 2 of the workstation (renumbered 0, 1), whole topology."""
    from rankmap.inventory.profile import dump_profile
    from rankmap.model import Inventory

    ws = load_machine("workstation-4gpu")[0]
    gpus = tuple(replace(g, nvml_index=i) for i, g in enumerate((ws.gpus[0], ws.gpus[2])))
    pod = replace(ws, hostname="ws-pod", gpus=gpus, view="container")
    path = tmp_path / "ws-pod.json"
    path.write_text(dump_profile(Inventory((pod,))))
    return path


def test_container_that_sees_only_far_gpus_gets_no_impossible_fix(tmp_path: Path) -> None:
    # GPUs 0 and 2 are all the pod has: SYS between them, but no closer pair it could pick
    report = check(
        ["torchrun", "--nproc-per-node", "2", "train.py"], [str(container_pair(tmp_path))]
    )
    assert "RM990" not in codes(report)
    buses = sorted(p.pci_bus_id or "" for p in report.placements)
    assert buses == [WS_GPU0, WS_GPU2]


def test_split_machine_without_topology_still_reported() -> None:
    pods = [
        replace(load_machine(str(TOPO / f"{p}.json"))[0], topology=None) for p in ("pod-a", "pod-b")
    ]
    report = check_launch(
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "4", "train.py"],
        machines=pods,
        env={},
        cwd=TOPO,
    )
    (rm803,) = [f for f in report.findings if f.code == "RM803"]
    assert "NVLink" not in rm803.title and "no shared memory or CUDA P2P" in rm803.detail
    assert rm803.ranks == tuple(range(8))
