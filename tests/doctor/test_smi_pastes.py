"""Every way a paste of nvidia-smi output gets mangled, on samples written here.

The workstation samples in tests/data/smi/ (4x RTX A6000, bus ids 4F/52/56/57) are taken
through each rendering a person or a tool applies; every variant must give the same GPUs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from doctor_fakes import SMI

from rankmap.adapters.files import LocalFiles
from rankmap.errors import InputError
from rankmap.inventory import load_machines, parse_machine_text, read_pastes
from rankmap.inventory.smi_common import UNKNOWN_UUID_PREFIX
from rankmap.model import Host

BUS_IDS = ["0000:4F:00.0", "0000:52:00.0", "0000:56:00.0", "0000:57:00.0"]
UUIDS = [
    "GPU-65d5d04d-361f-56b7-b8f2-dfe6196ff9cf",
    "GPU-55080791-5cb5-5050-abad-a270bd26c6b9",
    "GPU-0d0bb1d4-a23b-5a06-96b2-f10575883fcf",
    "GPU-26fffbb8-9ae0-59fc-a97d-52086c6ed39c",
]
TABLE = (SMI / "ws4_table_r550.txt").read_text(encoding="utf-8")
OLD_TABLE = (SMI / "ws4_table_r525.txt").read_text(encoding="utf-8")
LIST = (SMI / "ws4_list.txt").read_text(encoding="utf-8")


def _one(text: str, source: str = "paste.txt") -> Host:
    hosts = parse_machine_text(text, source=source)
    assert len(hosts) == 1, [h.hostname for h in hosts]
    return hosts[0]


def _each_line(prefix: Callable[[int], str]) -> Callable[[str], str]:
    return lambda text: "\n".join(prefix(n) + line for n, line in enumerate(text.splitlines()))


RENDERINGS: dict[str, Callable[[str], str]] = {
    "iso-timestamps": _each_line(lambda n: f"2026-12-01T09:{n % 60:02d}:00.123Z "),
    "bracket-timestamps": _each_line(lambda n: f"[2026-12-01 09:00:{n % 60:02d},004] "),
    "ray-prefix": _each_line(lambda n: "(head, rank=0, pid=4242) "),
    "skypilot-prefix": _each_line(lambda n: "(task, pid=7059) "),
    "srun-label": _each_line(lambda n: "0: "),
    "compose-prefix": _each_line(lambda n: "trainer_1  | "),
    "kubectl-prefix": _each_line(lambda n: "[pod/trainer-0/main] "),
    "blockquote": _each_line(lambda n: "> "),
    "nested-blockquote": _each_line(lambda n: "> > "),
    "four-backtick-fence": lambda t: "my output:\n````text\n" + t + "\n````\nthanks",
    "tilde-fence": lambda t: "~~~\n" + t + "\n~~~",
    "inline-backticks": _each_line(lambda n: "`"),
    "bold": lambda t: t.replace("NVIDIA RTX A6000", "**NVIDIA RTX A6000**"),
    "em-dashes": lambda t: t.replace("--", "\u2014"),
    "en-dashes": lambda t: t.replace("-", "\u2013").replace("\u2013Id", "-Id"),
    "box-drawing": lambda t: t.replace("|", "\u2502").replace("-", "\u2500").replace("=", "\u2550"),
    "lost-box-characters": lambda t: re.sub(r"[+\-=]{3,}", "", t),
    "collapsed-spaces": lambda t: re.sub(r" {2,}", " ", t),
    "ragged-indentation": _each_line(lambda n: " " * (n % 5)),
    "flattened": lambda t: re.sub(r"\s+", " ", t),
    "crlf-and-ansi": lambda t: "\x1b[32m" + t.replace("\n", "\r\n") + "\x1b[0m",
    "nbsp-and-tabs": lambda t: t.replace("  ", "\u00a0 ").replace("    ", "\t"),
    "log-lines-around": lambda t: (
        "INFO starting job 17\nloading model...\n"
        + t
        + "\nTraceback (most recent call last):\n  File 'x.py', line 1\nRuntimeError: boom\n"
    ),
}


@pytest.mark.parametrize("name", sorted(RENDERINGS))
@pytest.mark.parametrize("table", ["r550", "r525"])
def test_every_rendering_of_the_table_gives_the_same_gpus(name: str, table: str) -> None:
    text = RENDERINGS[name](TABLE if table == "r550" else OLD_TABLE)
    host = _one(text)
    assert [g.pci_bus_id for g in host.gpus] == BUS_IDS
    assert [g.nvml_index for g in host.gpus] == [0, 1, 2, 3]
    assert all(g.uuid.startswith(UNKNOWN_UUID_PREFIX) for g in host.gpus)
    assert all(any("UUID" in e for e in g.errors) for g in host.gpus)


@pytest.mark.parametrize(
    "name", ["iso-timestamps", "ray-prefix", "srun-label", "blockquote", "flattened", "bold"]
)
def test_every_rendering_of_the_list_gives_the_same_uuids(name: str) -> None:
    host = _one(RENDERINGS[name](LIST))
    assert [g.uuid for g in host.gpus] == UUIDS


def test_table_rows_are_found_by_content_not_by_the_first_line() -> None:
    text = "some prose\n| col | other |\n" + TABLE.split("\n", 8)[8]  # banner and header cut
    assert [g.pci_bus_id for g in _one(text).gpus] == BUS_IDS


def test_r3xx_table_without_cuda_column_and_with_old_process_rows() -> None:
    text = """+------------------------------------------------------+
| NVIDIA-SMI 352.79     Driver Version: 352.79         |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  Tesla K80           On   | 0000:05:00.0     Off |                    0 |
| N/A   41C    P0    58W / 149W |   1021MiB / 11519MiB |     41%      Default |
+-------------------------------+----------------------+----------------------+
|   1  Tesla K80           On   | 0000:06:00.0     Off |                    0 |
| N/A   33C    P8    29W / 149W |     55MB / 11519MB   |      0%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID  Type  Process name                               Usage      |
|=============================================================================|
|    0     20301    C   python                                         966MiB |
+-----------------------------------------------------------------------------+
"""
    host = _one(text)
    assert [g.pci_bus_id for g in host.gpus] == ["0000:05:00.0", "0000:06:00.0"]
    assert (host.driver_version, host.cuda_driver_version) == ("352.79", None)
    assert [g.memory_mib for g in host.gpus] == [11519, 11519]
    assert [p.pid for p in host.gpus[0].processes or ()] == [20301]
    assert host.gpus[1].processes == ()


# --- nvidia-smi -q text ----------------------------------------------------------------------

Q_TEXT = """==============NVSMI LOG==============

Timestamp                                 : Tue Dec  1 09:00:00 2026
Driver Version                            : 550.54.15
CUDA Version                              : 12.4

Attached GPUs                             : 2
GPU 00000000:4F:00.0
    Product Name                          : NVIDIA RTX A6000
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    GPU UUID                              : GPU-65d5d04d-361f-56b7-b8f2-dfe6196ff9cf
    Minor Number                          : 0
    PCI
        Bus                               : 0x4F
        Bus Id                            : 00000000:4F:00.0
    FB Memory Usage
        Total                             : 49140 MiB
        Used                              : 3 MiB

GPU 00000000:52:00.0
    Product Name                          : NVIDIA RTX A6000
    GPU UUID                              : GPU-55080791-5cb5-5050-abad-a270bd26c6b9
    Minor Number                          : 1
    FB Memory Usage
        Total                             : 49140 MiB
"""


def test_q_text_whole() -> None:
    host = _one(Q_TEXT)
    assert [g.pci_bus_id for g in host.gpus] == BUS_IDS[:2]
    assert [g.uuid for g in host.gpus] == UUIDS[:2]
    assert [g.minor_number for g in host.gpus] == [0, 1]
    assert host.gpus[0].memory_mib == 49140
    assert host.driver_version == "550.54.15"


def test_q_excerpt_starting_at_the_second_gpu_header() -> None:
    host = _one(Q_TEXT[Q_TEXT.index("GPU 00000000:52:00.0") :])
    assert [(g.pci_bus_id, g.uuid) for g in host.gpus] == [(BUS_IDS[1], UUIDS[1])]


def test_q_memory_only_keeps_what_it_does_not_show_unknown() -> None:
    text = """Attached GPUs                             : 1
GPU 00000000:4F:00.0
    FB Memory Usage
        Total                             : 49140 MiB
"""
    gpu = _one(text).gpus[0]
    assert gpu.pci_bus_id == BUS_IDS[0] and gpu.memory_mib == 49140
    assert gpu.uuid.startswith(UNKNOWN_UUID_PREFIX) and gpu.name is None
    assert any("does not show this GPU's UUID" in e for e in gpu.errors)


def test_q_excerpt_without_section_header_has_no_bus_id_and_says_so() -> None:
    text = "    Product Name : NVIDIA RTX A6000\n    GPU UUID : " + UUIDS[2] + "\n"
    gpu = _one(text).gpus[0]
    assert gpu.uuid == UUIDS[2] and gpu.pci_bus_id is None
    assert any("PCI bus id" in e for e in gpu.errors)


def test_q_mig_devices() -> None:
    text = """GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-40GB
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG Device
        Index                             : 0
        GPU Instance ID                   : 1
        Compute Instance ID               : 0
        FB Memory Usage
            Total                         : 19968 MiB
    MIG Device
        Index                             : 1
        GPU Instance ID                   : 2
        Compute Instance ID               : 0
    Accounting Mode                       : Disabled
    GPU UUID                              : GPU-11111111-2222-3333-4444-555555555555
"""
    gpu = _one(text).gpus[0]
    assert gpu.mig_mode
    assert [(m.index, m.gi, m.ci) for m in gpu.mig_devices] == [(0, 1, 0), (1, 2, 0)]
    assert gpu.mig_devices[0].memory_mib == 19968
    assert gpu.uuid == "GPU-11111111-2222-3333-4444-555555555555"


# --- XML cut off ------------------------------------------------------------------------------


def test_xml_cut_keeps_complete_gpus_and_says_where_it_stops() -> None:
    xml = (SMI / "ws4_q.xml").read_text(encoding="utf-8")
    cut = xml[: xml.index("00000000:56:00.0") + 40]  # inside the third GPU's opening
    host = _one(cut)
    assert [g.uuid for g in host.gpus[:2]] == UUIDS[:2]
    assert host.gpus[-1].pci_bus_id == BUS_IDS[2]
    assert any("cuts the XML" in e for e in host.gpus[-1].errors)
    assert not any("cuts the XML" in e for e in host.gpus[0].errors)


# --- query CSV --------------------------------------------------------------------------------


def test_csv_with_units_extra_fields_and_name_first() -> None:
    text = (
        "$ nvidia-smi --query-gpu=name,memory.total,uuid,temperature.gpu,pci.bus_id,index "
        "--format=csv\n"
        "name, memory.total [MiB], uuid, temperature.gpu, pci.bus_id, index\n"
        f"NVIDIA RTX A6000, 49140 MiB, {UUIDS[0]}, 35, 00000000:4F:00.0, 0\n"
        f"NVIDIA RTX A6000, 49140 MiB, {UUIDS[1]}, 36, 00000000:52:00.0, 1\n"
    )
    host = _one(text)
    assert [(g.nvml_index, g.uuid, g.pci_bus_id) for g in host.gpus] == [
        (0, UUIDS[0], BUS_IDS[0]),
        (1, UUIDS[1], BUS_IDS[1]),
    ]
    assert host.gpus[0].memory_mib == 49140


def test_noheader_csv_takes_its_names_from_the_command_line() -> None:
    text = (
        "nvidia-smi --query-gpu=temperature.gpu,gpu_uuid,name --format=csv,noheader,nounits\n"
        f"rows: ['35, {UUIDS[3]}, NVIDIA RTX A6000', '']\n"
    )
    gpu = _one(text).gpus[0]
    assert gpu.uuid == UUIDS[3] and gpu.nvml_index == 0 and gpu.pci_bus_id is None
    assert any("row order" in e for e in gpu.errors)


# --- several machines in one paste ------------------------------------------------------------

SERVER_B = (
    "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-0000-0000-0000-000000000000)\n"
    "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-aaaaaaaa-0000-0000-0000-000000000001)\n"
)


def test_list_of_two_servers_one_after_the_other_is_two_hosts() -> None:
    hosts = parse_machine_text(LIST + SERVER_B, source="/tmp/two.txt")
    assert [h.hostname for h in hosts] == ["two-1", "two-2"]
    assert [len(h.gpus) for h in hosts] == [4, 2]
    assert hosts[1].gpus[0].uuid.startswith("GPU-aaaaaaaa")


def test_hosts_are_named_from_prompts_and_host_prefixes() -> None:
    text = (
        "alice@node-a:~$ nvidia-smi -L\n" + LIST + "alice@node-a:~$ ssh node-b nvidia-smi -L\n"
    ) + SERVER_B
    assert [h.hostname for h in parse_machine_text(text, source="x")] == ["node-a", "node-b"]
    flat = " ".join(f"gpu{n}.example.org: {line}" for n in (1, 2) for line in SERVER_B.splitlines())
    assert [h.hostname for h in parse_machine_text(flat, source="x")] == [
        "gpu1.example.org",
        "gpu2.example.org",
    ]


def test_a_login_node_prompt_before_srun_names_no_gpu_host() -> None:
    text = "bob@login01:~$ srun -N2 nvidia-smi -L\n" + SERVER_B + SERVER_B.replace("aaaa", "bbbb")
    assert [h.hostname for h in parse_machine_text(text, source="job.out")] == [
        "job-1",
        "job-2",
    ]


def test_interleaved_srun_tasks_are_kept_apart_by_their_labels() -> None:
    b = SERVER_B.replace("aaaa", "bbbb").splitlines()
    a = SERVER_B.splitlines()
    text = "\n".join([f"0: {a[0]}", f"1: {b[0]}", f"1: {b[1]}", f"0: {a[1]}"])
    hosts = parse_machine_text(text, source="slurm.out")
    assert [[g.uuid[4:12] for g in h.gpus] for h in hosts] == [["aaaaaaaa"] * 2, ["bbbbbbbb"] * 2]


def test_the_same_named_printout_twice_is_one_host() -> None:
    line = f"node7 with {SERVER_B.splitlines()[0]}\n"
    assert len(parse_machine_text(line + line, source="x")) == 1


def test_two_tables_are_two_hosts_and_each_counts_as_one_machine(tmp_path: Path) -> None:
    path = tmp_path / "nodes.txt"
    path.write_text("user@n1:~$ nvidia-smi\n" + TABLE + "\nuser@n2:~$ nvidia-smi\n" + TABLE)
    hosts = load_machines([str(path)], LocalFiles())
    assert [h.hostname for h in hosts] == ["n1", "n2"]
    assert all([g.pci_bus_id for g in h.gpus] == BUS_IDS for h in hosts)


def test_list_and_table_of_one_machine_are_joined() -> None:
    host = _one("$ nvidia-smi -L\n" + LIST + "\n$ nvidia-smi\n" + TABLE)
    assert [(g.uuid, g.pci_bus_id) for g in host.gpus] == list(zip(UUIDS, BUS_IDS, strict=True))
    assert not any("UUID" in e or "bus id" in e for g in host.gpus for e in g.errors)


def test_single_host_paste_keeps_todays_name() -> None:
    assert _one("root@box:~# nvidia-smi -L\n" + LIST, source="/p/ws.txt").hostname == "ws"


# --- not nvidia-smi output --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "GPU 0: TITAN X (Pascal), SM61, WDDM, pciBusId 2\n",  # a CUDA sample's own listing
        "GPU  Temp   AvgPwr\n0    31.0c  N/A\n",  # rocm-smi
        "Is CUDA available: Yes\nGPU models and configuration: GPU 0: NVIDIA A100\n",
        "lorem ipsum\n" * 50,
    ],
)
def test_other_text_is_refused_naming_the_forms_read(text: str) -> None:
    with pytest.raises(InputError) as info:
        parse_machine_text(text, source="paste")
    assert "\n" not in info.value.message
    assert "nvidia-smi -q text" in info.value.message and "nvidia-smi -L" in info.value.message
    assert read_pastes(text) == []


def test_read_pastes_finds_machines_in_a_log() -> None:
    log = "rank 0 starting\nNCCL INFO comm 0x1 rank 0\n" + LIST + "NCCL WARN oops\n"
    assert [g.uuid for g in read_pastes(log)[0].gpus] == UUIDS


def test_csv_index_of_thousands_of_digits_is_no_index_and_a_short_error() -> None:
    """int() of over 4,300 digits raises ValueError: such a column is an input error, one line."""
    text = f"index, name, pci.bus_id\n{'9' * 5000}, NVIDIA H100, 00000000:18:00.0\n"
    with pytest.raises(InputError, match="has no GPU index") as err:
        parse_machine_text(text, source="big.csv")
    assert len(str(err.value)) < 200 and "\n" not in str(err.value)
