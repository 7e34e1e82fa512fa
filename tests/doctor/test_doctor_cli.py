"""`rankmap doctor` end to end, in-process, with NVML and system facts injected."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pynvml
import pytest
from doctor_fakes import FIXED_IDENTITY, check_golden, system_facts

import rankmap
from rankmap.adapters.versions import Versions
from rankmap.model import HostIdentity

DATA_SMI = Path(__file__).parents[1] / "data" / "smi"
DGX_CVD = "CUDA_VISIBLE_DEVICES=3,GPU-e5c0,0,9,1"  # GPU-e5c0...: the UUID prefix of GPU 5


def _json(result) -> dict:
    doc = json.loads(result.stdout)
    assert doc["schema"] == "rankmap/1" and doc["command"] == "doctor"
    return doc


def codes(doc: dict) -> list[str]:
    return [f["code"] for f in doc["findings"]]


def test_issue_example_lists_3_5_0_and_drops_9_and_after(run_cli) -> None:
    result = run_cli(["doctor", "--machine", "dgx-h100", "--env", DGX_CVD, "--json"])
    assert result.status == 0, result.stderr
    doc = _json(result)
    assert [d["nvml_index"] for d in doc["visible_devices"]] == [3, 5, 0]
    assert [d["cuda_index"] for d in doc["visible_devices"]] == [0, 1, 2]
    notes = " ".join(doc["visible_devices_notes"])
    assert "'9'" in notes and "'1' after it is ignored" in notes
    assert codes(doc) == ["RM202"]
    assert doc["simulated"] is True
    assert doc["inventory"]["hosts"][0]["gpus"][3]["pci_bus_id"] == "0000:5D:00.0"
    check_golden("doctor_dgx_h100_cvd.json", result.stdout)


def test_issue_example_text(run_cli) -> None:
    result = run_cli(["doctor", "--machine", "dgx-h100", "--env", DGX_CVD])
    assert result.status == 0
    assert "cuda:1 │ 5" in result.stdout
    check_golden("doctor_dgx_h100_cvd.txt", result.stdout)


def test_machine_ignores_the_real_environment_unless_inherited(run_cli) -> None:
    env = {"CUDA_VISIBLE_DEVICES": "0", "RANK": "3"}
    doc = _json(run_cli(["doctor", "--machine", "dgx-h100", "--json"], env=env))
    assert len(doc["visible_devices"]) == 8 and doc["launcher_env"] == {}
    doc = _json(
        run_cli(
            ["doctor", "--machine", "dgx-h100", "--inherit-env", "--json"],
            env=env,
            system_facts=system_facts(),
        )
    )
    assert [d["nvml_index"] for d in doc["visible_devices"]] == [0]
    assert doc["launcher_env"] == {"RANK": "3"}
    assert doc["versions"]["torch_version"] == "2.5.1+cu124"


def test_live_nvml_text_and_json(run_cli, fake_nvml) -> None:
    fake_nvml()
    argv = ["doctor", "--env", "NCCL_DEBUG=INFO", "--env", "NCCL_IB_PASSWORD=hunter2"]
    env = {"MASTER_ADDR": "10.0.0.1", "PATH": "/usr/bin"}
    text = run_cli(argv, env=env, system_facts=system_facts())
    doc = _json(run_cli([*argv, "--json"], env=env, system_facts=system_facts()))
    assert text.status == 0
    assert "hunter2" not in text.stdout and "hunter2" not in json.dumps(doc)
    assert doc["gpu_env"] == {"NCCL_DEBUG": "INFO", "NCCL_IB_PASSWORD": "<redacted>"}
    assert doc["launcher_env"] == {"MASTER_ADDR": "10.0.0.1"}
    assert doc["source"] == "nvml" and doc["simulated"] is False
    # GPU 1 runs pid 4242; torch cu124 on a CUDA 12.2 driver
    assert codes(doc) == ["RM010", "RM050"]
    assert doc["versions"]["verdict"] == "too_old"
    assert doc["processes"] == [
        {
            "nvml_index": 1,
            "pci_bus_id": "0000:52:00.0",
            "pid": 4242,
            "name": "python",
            "used_memory_mib": 14195,
        }
    ]
    assert doc["host_identity"]["nccl_host_hash_input"] == "gpu-node-01" + FIXED_IDENTITY.boot_id
    check_golden("doctor_nvml_2gpu.txt", text.stdout)
    check_golden("doctor_nvml_2gpu.json", json.dumps(doc, indent=2) + "\n")


def test_no_driver_exit_0_with_rm001(run_cli, fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    result = run_cli(["doctor", "--json"], system_facts=system_facts())
    assert result.status == 0
    doc = _json(result)
    assert codes(doc) == ["RM001"] and doc["verdict"] == "warning"
    assert doc["inventory"] == {"hosts": []} and doc["visible_devices"] == []
    assert doc["host_identity"]["hostname"] == "gpu-node-01"
    check_golden("doctor_no_nvml.json", result.stdout)
    text = run_cli(["doctor"], system_facts=system_facts())
    assert "NVML is not available" in text.stdout
    check_golden("doctor_no_nvml.txt", text.stdout)


def test_nvml_mismatch_is_an_error_finding_rest_intact(run_cli, fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_LIB_RM_VERSION_MISMATCH)
    result = run_cli(["doctor", "--json"], env={"RANK": "0"}, system_facts=system_facts())
    assert result.status == 1
    doc = _json(result)
    assert codes(doc) == ["RM002", "RM980"]
    assert doc["versions"]["torch_version"] == "2.5.1+cu124"


def test_gpu_lost_keeps_the_report(run_cli, fake_nvml) -> None:
    fake_nvml(fail={("nvmlDeviceGetHandleByIndex", 0): pynvml.NVML_ERROR_GPU_IS_LOST})
    doc = _json(run_cli(["doctor", "--json"], system_facts=system_facts()))
    assert codes(doc)[0] == "RM002"
    assert doc["inventory"]["hosts"][0]["gpus"][1]["pci_bus_id"] == "0000:52:00.0"
    assert any("GpuIsLost" in n for n in doc["inventory_notes"])


def test_cvd_hiding_everything_exits_1(run_cli) -> None:
    for value in ("-1", "", "NoDevFiles", "0,0"):
        result = run_cli(
            [
                "doctor",
                "--machine",
                "workstation-4gpu",
                "--env",
                f"CUDA_VISIBLE_DEVICES={value}",
                "--json",
            ]
        )
        assert result.status == 1, value
        assert codes(_json(result)) == ["RM203"], value


def test_order_mismatch_on_mixed_machine(run_cli) -> None:
    doc = _json(run_cli(["doctor", "--machine", "mixed-2gpu", "--json"]))
    assert codes(doc) == ["RM204"]
    assert "cuda:0 is nvidia-smi GPU 1" in doc["findings"][0]["title"]
    doc = _json(
        run_cli(
            ["doctor", "--machine", "mixed-2gpu", "--env", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "--json"]
        )
    )
    assert codes(doc) == [] and doc["visible_devices"][0]["nvml_index"] == 0


def test_mig(run_cli) -> None:
    doc = _json(run_cli(["doctor", "--machine", "a100-mig", "--json"]))
    assert codes(doc) == ["RM603"]
    doc = _json(
        run_cli(
            [
                "doctor",
                "--machine",
                "a100-mig",
                "--env",
                "CUDA_VISIBLE_DEVICES=MIG-3274418e-8451-5f27-a7e4-1cb9d6001119,MIG-13d98c76",
                "--json",
            ]
        )
    )
    assert sorted(codes(doc)) == ["RM602", "RM603"]
    assert [d["mig"]["gi"] for d in doc["visible_devices"]] == [8]


def test_container_and_nccl_hostid(run_cli, fake_nvml) -> None:
    fake_nvml()
    ident = HostIdentity(
        hostname="pod-a",
        boot_id="b1",
        container="kubernetes",
        container_evidence=("KUBERNETES_SERVICE_HOST is set",),
    )
    doc = _json(
        run_cli(
            ["doctor", "--env", "NCCL_HOSTID=cluster", "--json"],
            system_facts=system_facts(ident, Versions()),
        )
    )
    assert {"RM703", "RM880"} <= set(codes(doc))
    assert doc["container"]["kind"] == "kubernetes"
    assert "renumbered from 0" in doc["container"]["implication"]
    assert doc["inventory"]["hosts"][0]["view"] == "container"
    assert doc["host_identity"]["nccl_host_hash_input"] == "cluster"


def test_launcher_variables_inside_a_launcher_are_not_flagged(run_cli) -> None:
    env = ["--env", "RANK=1", "--env", "LOCAL_RANK=1", "--env", "TORCHELASTIC_RUN_ID=abc"]
    doc = _json(run_cli(["doctor", "--machine", "dgx-a100", *env, "--json"]))
    assert "RM980" not in codes(doc)
    assert doc["launcher_env"]["TORCHELASTIC_RUN_ID"] == "abc"


def test_slurm_and_nvidia_visible_devices(run_cli) -> None:
    doc = _json(
        run_cli(["doctor", "--machine", "dgx-h100", "--env", "SLURM_STEP_GPUS=4,5", "--json"])
    )
    assert [d["nvml_index"] for d in doc["visible_devices"]] == [4, 5]
    doc = _json(
        run_cli(
            ["doctor", "--machine", "dgx-h100", "--env", "NVIDIA_VISIBLE_DEVICES=2,77", "--json"]
        )
    )
    assert "RM702" in codes(doc)


def test_save_round_trip(run_cli, fake_nvml, tmp_path: Path) -> None:
    fake_nvml()
    saved = run_cli(["doctor", "--save", "node.json", "--json"], system_facts=system_facts())
    assert saved.status == 0 and "saved profile" in saved.stderr
    first = _json(saved)["inventory"]
    again = _json(run_cli(["doctor", "--machine", str(tmp_path / "node.json"), "--json"]))
    assert again["inventory"]["hosts"][0]["gpus"] == first["hosts"][0]["gpus"]
    assert again["host_identity"]["hostname"] == "gpu-node-01"
    relative = _json(run_cli(["doctor", "--machine", "node.json", "--json"]))
    assert relative["inventory"] == again["inventory"]


def test_save_converts_a_paste(run_cli, tmp_path: Path) -> None:
    from doctor_fakes import SMI

    result = run_cli(
        ["doctor", "--machine", str(SMI / "ws4_q.xml"), "--save", str(tmp_path / "p.json")]
    )
    assert result.status == 0
    doc = _json(run_cli(["doctor", "--machine", str(tmp_path / "p.json"), "--json"]))
    assert doc["inventory"]["hosts"][0]["gpus"][0]["pci_bus_id"] == "0000:4F:00.0"


def test_save_without_nvml_exits_3(run_cli, fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    result = run_cli(["doctor", "--save", "x.json"], system_facts=system_facts())
    assert result.status == 3 and "no GPU inventory" in result.stderr


def test_multi_host_profile_and_host_option(run_cli, tmp_path: Path) -> None:
    a = json.loads((Path(rankmap.__file__).parent / "profiles" / "dgx-h100.json").read_text())
    b = json.loads(json.dumps(a["hosts"][0]))
    b["hostname"] = b["identity"]["hostname"] = "dgx-h100-02"
    a["hosts"].append(b)
    (tmp_path / "two.json").write_text(json.dumps(a))
    doc = _json(run_cli(["doctor", "--machine", "two.json", "--json"]))
    assert "choose with --host" in doc["inventory_notes"][0]
    doc = _json(run_cli(["doctor", "--machine", "two.json", "--host", "dgx-h100-02", "--json"]))
    assert doc["host_identity"]["hostname"] == "dgx-h100-02"
    bad = run_cli(["doctor", "--machine", "two.json", "--host", "nope"])
    assert bad.status == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--env", "CUDA_VISIBLE_DEVICES"],
        ["doctor", "--machine", "no-such-profile"],
        ["doctor", "--bogus"],
    ],
)
def test_usage_errors_exit_2(run_cli, argv: list[str]) -> None:
    result = run_cli(argv)
    assert result.status == 2
    assert result.stderr.startswith("rankmap: error:") and "Traceback" not in result.stderr


@pytest.mark.parametrize("machine", [["--machine", "dgx-h100"], []])
def test_doctor_json_never_imports_torch(machine: list[str]) -> None:
    src = Path(rankmap.__file__).parents[1]
    code = (
        "import sys, io, contextlib\n"
        "from rankmap.cli import main\n"
        "buf = io.StringIO()\n"
        "with contextlib.redirect_stdout(buf):\n"
        f"    status = main(['doctor', '--json', *{machine!r}])\n"
        "assert status in (0, 1), status\n"
        "heavy = [m for m in ('torch', 'numpy') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr


def test_machine_from_stdin(run_cli) -> None:
    from doctor_fakes import SMI

    paste = (SMI / "ws4_table_issue_paste.txt").read_text(encoding="utf-8")
    doc = _json(run_cli(["doctor", "--machine", "-", "--json"], stdin=paste))
    assert doc["inventory"]["hosts"][0]["gpus"][0]["pci_bus_id"] == "0000:4F:00.0"
    assert doc["inventory"]["hosts"][0]["hostname"] == "stdin"
    assert run_cli(["doctor", "--machine", "-"], stdin="").status == 2


def test_version_reasons_and_preloaded_nccl(run_cli, fake_nvml) -> None:
    fake_nvml()
    cpu = Versions(torch_version="2.13.0+cpu", python_version="3.11.7")
    doc = _json(
        run_cli(
            ["doctor", "--env", "LD_PRELOAD=/opt/nccl/lib/libnccl.so.2", "--json"],
            system_facts=system_facts(versions=cpu),
        )
    )
    assert doc["versions"]["verdict"] == "unknown"
    assert "CPU-only build" in doc["versions"]["verdict_reason"]
    assert "libnccl" in doc["versions"]["nccl_note"]
    ok = Versions(torch_version="2.5.1+cu121", torch_cuda_version="12.1", python_version="3.11.7")
    doc = _json(run_cli(["doctor", "--json"], system_facts=system_facts(versions=ok)))
    assert doc["versions"]["verdict"] == "ok" and doc["versions"]["nccl_note"] is None
    assert "RM050" not in codes(doc)


def test_inventory_findings_name_the_host(run_cli, fake_nvml) -> None:
    fake_nvml(init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    doc = _json(run_cli(["doctor", "--json"], system_facts=system_facts()))
    assert doc["findings"][0]["hosts"] == ["gpu-node-01"]


DESKTOP_SMI = (DATA_SMI / "desktop_4090_display_procs.txt").read_text()


def test_a_display_on_the_gpu_is_not_work_that_holds_it(run_cli, tmp_path: Path) -> None:
    (tmp_path / "smi.txt").write_text(DESKTOP_SMI)
    doc = _json(run_cli(["doctor", "--machine", str(tmp_path / "smi.txt"), "--json"]))
    assert "RM010" not in codes(doc)
    busy = DESKTOP_SMI.replace(
        "1903      G   /usr/bin/gnome-shell ", "1903      C   python           "
    )
    (tmp_path / "busy.txt").write_text(busy)
    doc = _json(run_cli(["doctor", "--machine", str(tmp_path / "busy.txt"), "--json"]))
    assert "RM010" in codes(doc)
