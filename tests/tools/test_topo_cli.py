"""rankmap topo: profiles, pasted nvidia-smi topo -m, JSON, bad input."""

from __future__ import annotations

import json
from pathlib import Path

from rankmap.topology import parse_topology


def test_topo_machine_text_is_like_nvidia_smi(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["topo", "--machine", "dgx-h100"])
    assert result.status == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "dgx-h100-01 (profile)"
    assert lines[1].split()[:3] == ["GPU0", "GPU1", "GPU2"]
    assert "CPU Affinity" in lines[1] and "NUMA Affinity" in lines[1]
    gpu0 = lines[2].split()
    assert gpu0[:3] == ["GPU0", "X", "NV18"] and gpu0[-2:] == ["0-55,112-167", "0"]
    assert "NIC0: mlx5_0" in result.stdout
    assert "NV#  = Connection traversing a bonded set of # NVLinks" in result.stdout


def test_topo_json_is_rankmap_report(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["topo", "--machine", "workstation-4gpu", "--json"])
    assert result.status == 0
    doc = json.loads(result.stdout)
    assert doc["schema"] == "rankmap/1" and doc["command"] == "topo" and doc["verdict"] == "ok"
    host = doc["topology"]["hosts"][0]
    assert host["hostname"] == "ws-01" and host["schema"] == "rankmap-topology/1"
    topo = parse_topology(host)
    assert topo.gpu_link(1, 2) == "SYS"


def test_topo_file_and_stdin(run_cli, jobs: Path) -> None:  # type: ignore[no-untyped-def]
    text = (jobs / "topo_h800.txt").read_text()
    by_file = run_cli(["topo", "--topo-file", str(jobs / "topo_h800.txt"), "--json"])
    by_stdin = run_cli(["topo", "--topo-file", "-", "--json"], stdin=text)
    assert by_file.status == by_stdin.status == 0
    a = json.loads(by_file.stdout)["topology"]["hosts"][0]
    b = json.loads(by_stdin.stdout)["topology"]["hosts"][0]
    assert a["matrix"] == b["matrix"]
    assert a["source"].endswith("topo_h800.txt")


def test_bad_inputs_exit_2_with_one_line(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("this is not a topology\n")
    binary = tmp_path / "bin.dat"
    binary.write_bytes(b"\x00\x01\x02")
    for argv in (
        ["topo", "--topo-file", str(garbage)],
        ["topo", "--topo-file", str(binary)],
        ["topo", "--topo-file", str(tmp_path / "missing.txt")],
        ["topo", "--machine", "no-such-profile"],
        ["topo", "--bogus"],
    ):
        result = run_cli(argv)
        assert result.status == 2, argv
        assert result.stderr.startswith("rankmap: error:"), argv
        assert "Traceback" not in result.stderr


def test_profile_without_topology_exits_3(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    profile = tmp_path / "bare.json"
    profile.write_text(
        json.dumps({"hosts": [{"hostname": "h", "gpus": [{"nvml_index": 0, "uuid": "GPU-1"}]}]})
    )
    result = run_cli(["topo", "--machine", str(profile)])
    assert result.status == 3
    assert "has no topology" in result.stderr


def test_links_down_are_reported(run_cli, tmp_path: Path, machine) -> None:  # type: ignore[no-untyped-def]
    host = machine("dgx-a100").to_dict()
    host["topology"]["gpus"][5]["nvlink"]["active"] = 8
    profile = tmp_path / "degraded.json"
    profile.write_text(json.dumps({"hosts": [host]}))
    result = run_cli(["topo", "--machine", str(profile), "--json"])
    doc = json.loads(result.stdout)
    assert [f["code"] for f in doc["findings"]] == ["RM992"]
    assert doc["findings"][0]["devices"] == ["0000:90:00.0"]
    assert result.status == 0  # a warning
    text = run_cli(["topo", "--machine", str(profile)]).stdout
    assert "GPU5: NVLink gen 3, 8/12 links up" in text and "RM992" in text
