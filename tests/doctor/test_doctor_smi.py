"""Every pasted nvidia-smi format loads into the same inventory model (same indices/bus ids)."""

from __future__ import annotations

from pathlib import Path

import pytest
from doctor_fakes import SMI

from rankmap.adapters.local import load_machine
from rankmap.errors import InputError
from rankmap.inventory import detect_format, parse_machine_text
from rankmap.inventory.normalise import paste_lines
from rankmap.inventory.smi import detect_text_format, parse
from rankmap.inventory.smi_common import UNKNOWN_UUID_PREFIX
from rankmap.model import Host

WS4_FILES = {
    "ws4_q.xml": "smi-xml",
    "ws4_list.txt": "smi-list",
    "ws4_query.csv": "smi-csv",
    "ws4_query_noheader.csv": "smi-csv",
    "ws4_query_busid_index.csv": "smi-csv",
    "ws4_table_r525.txt": "smi-table",
    "ws4_table_r550.txt": "smi-table",
    "ws4_table_issue_paste.txt": "smi-table",
}


def _load(name: str) -> Host:
    hosts = load_machine(str(SMI / name))
    assert len(hosts) == 1
    return hosts[0]


@pytest.mark.parametrize(("name", "fmt"), sorted(WS4_FILES.items()))
def test_format_is_detected(name: str, fmt: str) -> None:
    assert detect_format((SMI / name).read_text(encoding="utf-8")) == fmt


@pytest.mark.parametrize("name", sorted(WS4_FILES))
def test_every_format_gives_the_workstation_inventory(name: str, machine) -> None:
    profile = machine("workstation-4gpu")
    host = _load(name)
    assert [g.nvml_index for g in host.gpus] == [g.nvml_index for g in profile.gpus]
    by_index = {g.nvml_index: g for g in profile.gpus}
    for gpu in host.gpus:
        want = by_index[gpu.nvml_index]
        if gpu.pci_bus_id is not None:
            assert gpu.pci_bus_id == want.pci_bus_id
        else:  # -L carries no bus ids and says so
            assert any("bus id" in e for e in gpu.errors)
        if gpu.uuid.startswith(UNKNOWN_UUID_PREFIX):
            assert any("UUID" in e or "uuid" in e for e in gpu.errors)
        else:
            assert gpu.uuid == want.uuid


def test_bus_ids_agree_between_formats_that_have_them() -> None:
    with_bus = [n for n in WS4_FILES if n != "ws4_list.txt"]
    ids = {n: [g.pci_bus_id for g in _load(n).gpus] for n in with_bus}
    assert len({tuple(v) for v in ids.values()}) == 1, ids
    assert ids["ws4_q.xml"][0] == "0000:4F:00.0"


@pytest.mark.parametrize("name", ["ws4_q.xml", "ws4_table_r525.txt", "ws4_table_r550.txt"])
def test_process_tables_are_read(name: str) -> None:
    host = _load(name)
    assert [p.pid for p in host.gpus[1].processes or ()] == [34965]
    assert host.gpus[1].processes[0].used_memory_mib == 14192  # type: ignore[index]
    assert host.gpus[0].processes == ()


def test_driver_and_cuda_versions_from_table_and_xml() -> None:
    assert (
        _load("ws4_table_r525.txt").driver_version,
        _load("ws4_table_r525.txt").cuda_driver_version,
    ) == ("525.85.12", "12.0")
    xml = _load("ws4_q.xml")
    assert (xml.driver_version, xml.cuda_driver_version) == ("550.54.15", "12.4")
    assert _load("ws4_query_busid_index.csv").driver_version == "550.54.15"


def test_csv_columns_in_any_order_with_units() -> None:
    host = _load("ws4_query.csv")
    assert host.gpus[0].memory_mib == 49140
    assert host.gpus[0].name == "NVIDIA RTX A6000"


# --- MIG ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["a100mig_list.txt", "a100mig_list_legacy_r450.txt", "a100mig_q.xml", "a100mig_table_r535.txt"],
)
def test_mig_formats_give_seven_instances(name: str, machine) -> None:
    profile = machine("a100-mig")
    gpu = _load(name).gpus[0]
    assert gpu.mig_mode
    assert len(gpu.mig_devices) == 7
    want = profile.gpus[0]
    if gpu.pci_bus_id:
        assert gpu.pci_bus_id == want.pci_bus_id
    if name == "a100mig_list.txt":
        assert [m.uuid for m in gpu.mig_devices] == [m.uuid for m in want.mig_devices]
    if name != "a100mig_list.txt":  # XML, table and legacy -L name GI/CI ids
        assert [(m.gi, m.ci) for m in gpu.mig_devices] == [(m.gi, m.ci) for m in want.mig_devices]


def test_legacy_mig_uuid_resolves_through_cuda_visible_devices() -> None:
    from rankmap.visibility import resolve_visible

    host = _load("a100mig_list_legacy_r450.txt")
    parent = host.gpus[0].uuid
    view = resolve_visible(host, {"CUDA_VISIBLE_DEVICES": f"MIG-{parent}/9/0"})
    assert view.devices[0].mig is not None and view.devices[0].mig.gi == 9


def test_mig_processes_and_memory_from_xml() -> None:
    gpu = _load("a100mig_q.xml").gpus[0]
    assert [p.pid for p in gpu.processes or ()] == [51234]
    assert gpu.mig_devices[2].memory_mib == 4864


# --- verbatim reference samples ------------------------------------------------------------


def test_reference_samples() -> None:
    dd = _load("ref_list_mig_datadog.txt").gpus[0]
    assert dd.uuid == "GPU-7fdaf0a5-179b-f636-d15d-daf243e3ff16"
    assert dd.mig_devices[0].uuid == "MIG-feb88891-0321-5fef-9c87-d4af3b54259e"
    assert dd.mig_devices[0].profile == "1g.10gb"
    assert _load("ref_table_old_a4000.txt").gpus[0].pci_bus_id == "0000:65:00.0"
    assert _load("ref_table_old_a4000.txt").gpus[0].name == "NVIDIA RTX A4000"
    assert _load("ref_table_r535_l4.txt").gpus[0].pci_bus_id == "0000:31:00.0"
    for name in ("ref_query_2080ti.csv", "ref_query_2080ti_noheader.csv"):
        gpu = _load(name).gpus[0]
        assert (gpu.uuid, gpu.pci_bus_id) == (
            "GPU-eb6c0716-025b-941f-3e3d-bab07b5a9539",
            "0000:0A:00.0",
        )


def test_xml_with_prose_prompt_and_crlf_around_it() -> None:
    xml = (SMI / "ws4_q.xml").read_text(encoding="utf-8")
    paste = (
        "Here is my output:\r\n$ nvidia-smi -q -x\r\n"
        + xml.replace("\n", "\r\n")
        + "\r\nthanks\r\n"
    )
    hosts = parse_machine_text(paste, source="issue")
    assert [g.pci_bus_id for g in hosts[0].gpus][0] == "0000:4F:00.0"


def test_paste_lines_strip_ansi_and_crlf() -> None:
    lines = paste_lines("\x1b[1muser@node:~$ nvidia-smi -L\x1b[0m\r\nGPU 0: X (UUID: GPU-1)\r\n")
    assert [x.text for x in lines] == ["user@node:~$ nvidia-smi -L", "GPU 0: X (UUID: GPU-1)", ""]


# --- bad input -------------------------------------------------------------------------------


def test_entity_declarations_are_refused() -> None:
    bomb = (
        '<?xml version="1.0"?>\n<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>\n'
        '<nvidia_smi_log><gpu id="00000000:01:00.0"><uuid>&b;</uuid></gpu></nvidia_smi_log>\n'
    )
    with pytest.raises(InputError, match="entities"):
        parse_machine_text(bomb, source="bomb.xml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('<?xml version="1.0" ?>\n<nvidia_smi_log>\n<gpu>\n<uuid>N/A', "neither a uuid"),
        ("<nvidia_smi_log><gpu></nvidia_smi_log>", "malformed"),
        ("<nvidia_smi_log></nvidia_smi_log>", "no GPU"),
        ("hello world\nthis is not nvidia-smi\n", "not a machine description"),
        ("index, uuid\n0, GPU-11111111-2222-3333-4444-555555555555\n0, GPU-x\n", "twice"),
        ("index, pci.bus_id\n0, 00000000:ZZ:00.0\n", "not a PCI bus id"),
    ],
)
def test_garbage_is_one_input_error(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message) as info:
        parse_machine_text(text, source="paste")
    assert "\n" not in info.value.message


def test_unknown_format_name_is_an_input_error() -> None:
    with pytest.raises(InputError):
        parse("smi-json", "{}", source="x")


def test_detect_text_format_unknown_for_prose() -> None:
    assert detect_text_format("NCCL WARN Duplicate GPU detected") == "unknown"


@pytest.mark.parametrize("name", ["empty.txt", "binary.bin", "garbage.txt"])
def test_bad_machine_files_exit_2_with_one_line(tmp_path: Path, run_cli, name: str) -> None:
    path = tmp_path / name
    content = {
        "empty.txt": b"",
        "binary.bin": b"\x00\x01\x02nvidia",
        "garbage.txt": b"lorem ipsum\n",
    }
    path.write_bytes(content[name])
    result = run_cli(["doctor", "--machine", str(path), "--json"])
    assert result.status == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") <= 2 and result.stderr.startswith("rankmap: error:")


@pytest.mark.parametrize(
    ("name", "profile"),
    [("dgx_a100_table_r515.txt", "dgx-a100"), ("dgx_h100_table_r550.txt", "dgx-h100")],
)
def test_dgx_tables_match_the_builtin_profiles(name: str, profile: str, machine) -> None:
    host = _load(name)
    assert [g.pci_bus_id for g in host.gpus] == [g.pci_bus_id for g in machine(profile).gpus]
    assert [g.memory_mib for g in host.gpus] == [g.memory_mib for g in machine(profile).gpus]
    assert all(g.processes == () for g in host.gpus)  # "No running processes found"


def test_truncated_old_layout_names_are_kept_as_printed() -> None:
    assert _load("dgx_a100_table_r515.txt").gpus[0].name == "NVIDIA A100-SXM..."


@pytest.mark.parametrize(
    "text",
    [
        "| 0 " + " " * 4000 + "x\n",
        ("| " * 1500 + "\n") * 200,
        "\x1b]" * 50000,
        "GPU 0: " + "(UUID: " * 5000 + "\n",
        "| Processes: |\n" + ("|    1    3    0   34965   C   " + "py " * 500 + " 1MiB |\n") * 50,
    ],
    ids=["spaces", "pipes", "osc", "uuid-repeats", "long-process-rows"],
)
def test_pathological_pastes_are_rejected_not_hung(text: str) -> None:
    with pytest.raises(InputError):
        parse_machine_text(text, source="paste")
