"""Collation rules on synthetic records (pure: no torch, no processes)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from rankmap.probe.collate import collate, collate_raw
from rankmap.probe.network import ifname_matches
from rankmap.probe.record import RankRecord, record_from_json
from rankmap.probe.wire import encode
from rankmap.ranks import rank_ranges as ranges

GPUS = [f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd" for i in range(8)]
BUS = [f"0000:{0x18 + 0x10 * i:02X}:00.0" for i in range(8)]
BOOT = {"n0": "b0000000-0000", "n1": "b1111111-1111"}


def rec(rank: int, *, node: str = "n0", local: int | None = None, cuda: int | None = None,
        gpus: int = 8, **kw: Any) -> RankRecord:  # fmt: skip
    """A healthy torchrun rank: 8-GPU node, cuda:LOCAL_RANK."""
    local = rank % 4 if local is None else local
    cuda = local if cuda is None else cuda
    fields: dict[str, Any] = {
        "rank": rank,
        "world_size": kw.pop("world_size", 8),
        "local_rank": local,
        "local_world_size": 4,
        "node_rank": int(node[1:]) if node[1:].isdigit() else None,
        "launcher": "torchrun",
        "hostname": node,
        "boot_id": BOOT.get(node, f"boot-{node}"),
        "visible_uuids": tuple(GPUS[:gpus]),
        "cuda_index": cuda,
        "device_selected_by": "argument",
        "device_source": "profile:test",
        "torch_version": "2.13.0",
        "nccl_version": "2.21.5",
        "gpus": tuple({"nvml_index": i, "uuid": GPUS[i], "pci_bus_id": BUS[i]} for i in range(8)),
    }
    if cuda < gpus:
        fields.update(uuid=GPUS[cuda], pci_bus_id=BUS[cuda], nvml_index=cuda)
    else:
        fields["device_error"] = f"invalid device ordinal: cuda:{cuda} requested but {gpus} visible"
    fields.update(kw)
    return RankRecord(**fields)


def job(n_nodes: int = 2, per_node: int = 4) -> list[RankRecord]:
    return [
        rec(n * per_node + i, node=f"n{n}", local=i)
        for n in range(n_nodes)
        for i in range(per_node)
    ]


def codes(records: list[RankRecord], **kw: Any) -> list[str]:
    return [f.code for f in collate(records, **kw).findings]


def test_healthy_job_has_no_findings_and_a_full_map() -> None:
    report = collate(job(), world_size=8)
    assert report.findings == []
    assert report.verdict == "ok"
    assert [p.node for p in report.placements] == ["n0"] * 4 + ["n1"] * 4
    assert report.placements[5].pci_bus_id == BUS[1]
    assert report.sections["node_groups"][0]["count"] == 2
    assert len(report.sections["inventory"]["hosts"]) == 2


def test_duplicate_gpu_names_pairs_and_nccl_line() -> None:
    records = [rec(r, cuda=r % 2) for r in range(4)]
    report = collate(records)
    dup = [f for f in report.findings if f.code == "RM103"]
    assert len(dup) == 1
    assert "ranks 0 and 2 on GPU 0 (0000:18:00.0) of n0" in dup[0].title
    assert "ranks 1 and 3 on GPU 1 (0000:28:00.0) of n0" in dup[0].title
    assert "Duplicate GPU detected : rank 2 and rank 0 both on CUDA device 18000" in dup[0].detail
    assert dup[0].ranks == (0, 1, 2, 3)
    assert report.has_errors


def test_wrap_around_with_more_ranks_than_gpus_is_oversubscribed() -> None:
    records = [rec(r, local=r, cuda=r % 2, gpus=2, local_world_size=4) for r in range(4)]
    assert "RM101" in codes(records)


def test_no_set_device_all_on_current_device_zero() -> None:
    records = [rec(r, cuda=0, device_selected_by="current_device") for r in range(4)]
    assert codes(records)[0] == "RM301"


def test_per_process_cvd_same_gpu() -> None:
    records = [rec(r, cuda=0, gpus=1, cuda_visible_devices="0") for r in range(2)]
    assert "RM503" in codes(records)


def test_mig_siblings_of_one_gpu() -> None:
    mig = [f"MIG-{i}" for i in range(2)]
    records = [
        rec(r, cuda=0, gpus=1, uuid=mig[r], mig_parent_uuid=GPUS[0], visible_uuids=(mig[r],))
        for r in range(2)
    ]
    found = collate(records).findings
    assert found[0].code == "RM601"
    assert found[0].title.startswith("ranks 0 and 1 on GPU 0")


def test_out_of_range_with_narrowed_cvd() -> None:
    records = [rec(r, gpus=2, cuda_visible_devices="0,1") for r in range(4)]
    found = [f for f in collate(records).findings if "invalid device ordinal" in f.title]
    assert [f.code for f in found] == ["RM201"]
    assert found[0].ranks == (2, 3)
    assert "ask for cuda:2, cuda:3 but only 2 GPU(s) are visible" in found[0].title


def test_out_of_range_variants() -> None:
    global_rank = [rec(r, node="n1", local=r - 4, cuda=r, gpus=4) for r in range(4, 8)]
    assert "RM401" in codes(global_rank)
    one_each = [rec(r, cuda=r, gpus=1, visible_uuids=(GPUS[r],)) for r in range(2)]
    assert "RM501" in codes(one_each)
    plain = [rec(r, gpus=2) for r in range(3)]  # no CUDA_VISIBLE_DEVICES: nproc > GPUs
    assert "RM102" in codes(plain)


def test_duplicated_local_ranks_and_local_world_size() -> None:
    records = [rec(0, local=0), rec(1, local=0), rec(2, local=2, cuda=2), rec(3, cuda=3)]
    assert "RM960" in codes(records)
    short = [rec(r) for r in range(3)]  # LOCAL_WORLD_SIZE=4 but 3 ranks on n0
    assert "RM961" in codes(short)
    assert "RM961" not in codes(short, missing=[3])  # incomplete: no verdict on the count


def test_different_gpu_sets_on_one_node() -> None:
    records = [rec(0), rec(1), rec(2, visible_uuids=tuple(GPUS[2:4]), cuda=0, uuid=GPUS[2])]
    assert "RM260" in codes(records)
    singles = [
        rec(r, cuda=0, visible_uuids=(GPUS[r],), uuid=GPUS[r], pci_bus_id=BUS[r]) for r in range(2)
    ]
    assert "RM502" in codes(singles)


def test_host_identity_cases() -> None:
    same_name = [
        rec(r, node="twin", boot_id=b, local_world_size=None) for r, b in ((0, "aaaa"), (1, "bbbb"))
    ]
    report = collate(same_name)
    assert [f.code for f in report.findings] == ["RM802"]
    assert {p.node for p in report.placements} == {"twin#aaaa", "twin#bbbb"}
    same_boot = [rec(0, node="pod-a", boot_id="cccc"), rec(4, node="pod-b", boot_id="cccc")]
    assert "RM803" in codes(same_boot)
    hostid = [rec(r, node=f"n{r // 4}", nccl_hostid="cluster") for r in range(8)]
    found = collate(hostid).findings
    assert found[0].code == "RM801"
    assert found[0].hosts == ("n0", "n1")
    assert "RM103" not in [f.code for f in found]  # false duplicates are RM801's consequence
    node_rank = [rec(0, node="n0"), rec(4, node="n1", node_rank=0)]
    assert "RM804" in codes(node_rank)


def test_version_mismatch() -> None:
    records = job()
    records[5] = replace(records[5], nccl_version="2.19.3", torch_version="2.12.0")
    found = collate(records).findings
    assert found[0].code == "RM051" and "2.19.3 (ranks 5)" in found[0].title
    assert "RM052" in [f.code for f in found]


def test_socket_ifname() -> None:
    assert ifname_matches("eth", ["lo", "eth0", "eth1"]) == (["eth0", "eth1"], [])
    assert ifname_matches("=eth", ["lo", "eth0"]) == ([], ["eth"])
    assert ifname_matches("^lo,docker", ["lo", "docker0", "ens5"]) == (["ens5"], [])
    assert ifname_matches("ib,eth", ["lo", "eth0"]) == (["eth0"], ["ib"])
    bad = [rec(r, socket_ifname="ib0", interfaces=("lo", "eth0")) for r in range(4)]
    found = collate(bad).findings
    assert found[0].code == "RM020" and found[0].severity.value == "error"
    assert "NCCL_SOCKET_IFNAME=ib0 matches no interface on n0" in found[0].title
    partial = [rec(0, socket_ifname="eth,ib", interfaces=("lo", "eth0"), local_world_size=1)]
    assert collate(partial).findings[0].severity.value == "warning"


def test_missing_ranks_say_where_they_were_expected() -> None:
    records = job()[:6]
    report = collate(records, world_size=8, missing=[6, 7], timeout=5, where="agent store x:1")
    first = report.findings[0]
    assert first.code == "RM060"
    assert first.title == "ranks 6 and 7 never reported within 5 s"
    assert "ranks 6 and 7 expected on n1" in first.detail
    assert "agent store x:1" in first.detail
    assert report.sections["missing_ranks"] == [6, 7]


def test_more_arrivals_than_world_and_world_size_disagreement() -> None:
    assert "RM905" in codes(job(), world_size=8, arrivals=9)
    records = job()
    records[0] = replace(records[0], world_size=16)
    assert "RM905" in codes(records)


def test_assumption_and_blind_ranks_are_said() -> None:
    conv = [rec(r, device_selected_by="local_rank") for r in range(4)]
    found = collate(conv).findings
    assert found[0].code == "RM005" and found[0].severity.value == "info"
    blind = [
        RankRecord(rank=r, world_size=2, hostname="cpu", device_source="none",
                   problems=("no GPU information: NVML unavailable",))
        for r in range(2)
    ]  # fmt: skip
    found = collate(blind).findings
    assert "RM001" in [f.code for f in found]


def test_records_round_trip_through_json() -> None:
    original = rec(3, socket_ifname="eth0", interfaces=("lo", "eth0"), env={"NCCL_DEBUG": "INFO"})
    assert record_from_json(original.to_json()) == original
    parts = [encode(r) for r in job()]
    shared = {digest: blob for _, blob, digest in parts}
    assert len(shared) == 2  # one shared part per node
    report = collate_raw([own for own, _, _ in parts], shared, world_size=8)
    assert report.verdict == "ok"
    assert report.to_dict() == collate(job(), world_size=8).to_dict()


def test_large_job_groups_identical_nodes_and_lists_outliers() -> None:
    records = job(n_nodes=50, per_node=4)
    records[13] = replace(records[13], cuda_index=0, uuid=GPUS[0], pci_bus_id=BUS[0], nvml_index=0)
    report = collate(records, world_size=200)
    groups = report.sections["node_groups"]
    assert groups[0]["count"] == 49 and groups[1]["nodes"] == ["n3"]
    assert report.findings[0].code == "RM103"


@pytest.mark.parametrize(
    ("ranks", "text"), [([0, 1, 2, 5], "0-2, 5"), ([7], "7"), ([], ""), ([3, 1], "1, 3")]
)
def test_ranges(ranks: list[int], text: str) -> None:
    assert ranges(ranks) == text


def test_large_job_text_shows_grouped_layouts_and_outliers() -> None:
    import io

    from rankmap.cli.context import AppContext
    from rankmap.render.probe import render_probe as render_text

    records = job(n_nodes=50, per_node=4)
    records[13] = replace(records[13], cuda_index=0, uuid=GPUS[0], pci_bus_id=BUS[0], nvml_index=0)
    out = io.StringIO()
    ctx = AppContext(stdout=out, stderr=io.StringIO(), stdin=io.StringIO(), environ={}, width=100)
    render_text(collate(records, world_size=200), ctx)
    text = out.getvalue()
    assert "ERROR rankmap probe: 200 rank(s) on 50 node(s)" in text
    assert "49 node(s) x 4 ranks: n0, n1, n2, n4, +45 more" in text
    assert "outlier 1 node(s) x 4 ranks: n3" in text
    assert "0->cuda:0->GPU 0, 1->cuda:0->GPU 0, 2->cuda:2->GPU 2" in text  # the outlier's layout
    assert "Rank map" not in text  # no 200-row table


def _one_gpu_host(rank: int) -> RankRecord:
    """A rank on a one-GPU machine, no CUDA_VISIBLE_DEVICES: it sees the machine's one GPU."""
    one = ({"nvml_index": 0, "uuid": GPUS[0], "pci_bus_id": BUS[0]},)
    return replace(rec(rank, local=rank, gpus=1, world_size=2), gpus=one)


def test_two_processes_on_a_one_gpu_machine_are_too_many_not_per_process_binding() -> None:
    # review 19: RM501's fix (% device_count) would put both ranks on GPU 0
    found = codes([_one_gpu_host(0), _one_gpu_host(1)], world_size=2)
    assert "RM102" in found and "RM501" not in found


def test_a_visible_list_with_no_usable_entry_is_rm203_as_doctor_says() -> None:
    bad = [rec(r, local=r, gpus=0, world_size=2, cuda_visible_devices="0,0") for r in range(2)]
    found = codes(bad, world_size=2)
    assert "RM203" in found and "RM201" not in found


def test_two_mig_instances_in_one_visible_list_are_rm602() -> None:
    # review 19: CUDA shows one MIG instance per process; RM501's Slurm fix does not apply
    cvd = "MIG-11111111-2222-3333-4444-555555555555,MIG-66666666-7777-8888-9999-000000000000"
    bad = [rec(r, local=r, gpus=1, world_size=2, cuda_visible_devices=cvd) for r in range(2)]
    report = collate(bad, world_size=2)
    mig = [f for f in report.findings if f.code == "RM602"]
    assert mig and mig[0].severity.value == "error"
    assert mig[0].title.startswith("rank 1 on n0 asks for cuda:1")
