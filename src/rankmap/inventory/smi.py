"""Pasted ``nvidia-smi`` output -> :class:`~rankmap.model.Host` (one host per paste).

Formats (samples and sources: reference/nvidia_smi_formats.md):

* ``smi-xml``   ``nvidia-smi -q -x`` (any DTD version, MIG devices, processes). Parsed with
  ``xml.etree`` after rejecting any ``<!ENTITY`` declaration (no entity-expansion bombs); the
  external DTD named by ``<!DOCTYPE ... SYSTEM ...>`` is never fetched.
* ``smi-list``  ``nvidia-smi -L`` (GPU lines, R470+ MIG lines, legacy ``MIG-GPU-<uuid>/gi/ci``).
  It carries no PCI bus ids; every GPU says so in ``Gpu.errors``.
* ``smi-csv``   ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``, any column order;
  needs ``index`` and ``uuid`` or ``pci.bus_id`` (without a header they are recognised by shape).
* ``smi-table`` the default table, old (<= R530) and R535+ layouts, its MIG-devices and process
  tables. It carries no UUIDs; placeholders ``unknown-uuid:nvml<N>`` stand in and say so.

Text pasted into issues is tolerated: CRLF, ANSI colour codes, ``$ nvidia-smi`` prompt lines and
prose around the output. Anything else raises :class:`~rankmap.errors.InputError` (one line).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from rankmap.errors import InputError
from rankmap.inventory.smi_common import (
    UNKNOWN_UUID_PREFIX,
    bus_id,
    clean_text,
    leading_int,
    make_host,
    unknown_uuid,
)
from rankmap.inventory.smi_xml import parse_xml
from rankmap.model import Gpu, GpuProcess, Host, MigDevice

_BUS = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]"
_UUID = r"GPU-[0-9A-Fa-f]{8}(?:-[0-9A-Fa-f]{4}){3}-[0-9A-Fa-f]{12}"
_LIST_GPU = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: (GPU-[0-9A-Fa-f-]+)\)\s*$")
_LIST_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[^)\s]+)\)\s*$")
_TABLE_HEAD = re.compile(
    r"NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)(?:\s+CUDA Version:\s*([0-9.]+|N/A))?"
)
_TABLE_BUS_CELL = re.compile(rf"^\s*({_BUS})(?:\s|$)")
_TABLE_GPU_CELL = re.compile(r"^\s*(\d+)\s+(\S.*)$")
_TABLE_MEM = re.compile(r"\|\s*(\d+)\s*MiB\s*/\s*(\d+)\s*MiB\s*\|")
_TABLE_MIGDEV = re.compile(
    r"^\|\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*\|\s*(\d+)\s*MiB\s*/\s*(\d+)\s*MiB"
)
_MIG_MODES = ("Enabled", "Disabled", "N/A")
_PROC_TYPES = frozenset({"C", "G", "M", "C+G", "M+C"})
MAX_LINE = 4096  # nvidia-smi lines are ~100 characters; longer lines are not its output


def _lines(text: str) -> list[str]:
    """Cleaned lines short enough to be nvidia-smi text (keeps every regex linear in practice)."""
    return [line for line in clean_text(text) if len(line) <= MAX_LINE]


def _cells(line: str) -> list[str]:
    """``| a | b |`` -> ``["a", "b"]`` (table rows)."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table_gpu_row(line: str) -> tuple[int, str, str] | None:
    """(index, name, bus id) of a GPU row ``|   0  NAME   Off | 00000000:4F:00.0 Off | ...``."""
    if not line.startswith("|") or line.count("|") < 3:
        return None
    parts = line.strip().strip("|").split("|")
    head = _TABLE_GPU_CELL.match(parts[0])
    bus = _TABLE_BUS_CELL.match(parts[1])
    if not head or not bus:
        return None
    words = head.group(2).split()
    if len(words) > 1 and words[-1] in ("On", "Off", "N/A"):
        words = words[:-1]  # the Persistence-M column
    return int(head.group(1)), " ".join(words), bus.group(1)


def _table_process_row(line: str) -> tuple[int, GpuProcess] | None:
    """``|    1    3    0      34965      C   python     14195MiB |`` (GI/CI optional)."""
    cells = _cells(line)
    if len(cells) != 1 or not line.startswith("|"):
        return None
    words = cells[0].split()
    if len(words) < 5 or not words[0].isdigit():
        return None
    gi_ci = 2 if len(words) >= 7 and words[3].isdigit() and words[4] in _PROC_TYPES else 0
    pid, kind, memory = words[1 + gi_ci], words[2 + gi_ci], words[-1]
    if not pid.isdigit() or kind not in _PROC_TYPES or not re.fullmatch(r"\d+MiB|N/A", memory):
        return None
    name = " ".join(words[3 + gi_ci : -1]) or None
    used = int(memory[:-3]) if memory != "N/A" else None
    return int(words[0]), GpuProcess(pid=int(pid), name=name, used_memory_mib=used)


def process_rows(text: str) -> list[tuple[int, GpuProcess]]:
    """(nvidia-smi GPU index, process) of every row of a pasted process table."""
    return [row for line in _lines(text) if (row := _table_process_row(line)) is not None]


def detect_text_format(text: str) -> str:
    """``smi-list`` | ``smi-csv`` | ``smi-table`` | ``unknown`` (``smi-xml`` too, in prose)."""
    if "<nvidia_smi_log" in text:
        return "smi-xml"
    lines = _lines(text)
    if any(_TABLE_HEAD.search(line) for line in lines) or any(
        _table_gpu_row(line) for line in lines
    ):
        return "smi-table"
    if any(_LIST_GPU.match(line) for line in lines):
        return "smi-list"
    if _find_csv(lines) is not None:
        return "smi-csv"
    return "unknown"


def parse(fmt: str, text: str, *, source: str) -> list[Host]:
    """Parse ``text`` in format ``fmt`` into one host; ``InputError`` names what is wrong."""
    parsers = {
        "smi-xml": parse_xml,
        "smi-list": _parse_list,
        "smi-csv": _parse_csv,
        "smi-table": _parse_table,
    }
    if fmt not in parsers:
        raise InputError(f"{source}: unknown nvidia-smi format {fmt!r}")
    host = parsers[fmt](text, source)
    if not host.gpus:
        raise InputError(f"{source}: {fmt} output lists no GPU")
    indices = [g.nvml_index for g in host.gpus]
    if len(set(indices)) != len(indices):
        raise InputError(f"{source}: {fmt} output lists a GPU index twice")
    return [host]


# --- nvidia-smi -L -----------------------------------------------------------------------------


def _parse_list(text: str, source: str) -> Host:
    gpus: list[Gpu] = []
    migs: list[MigDevice] = []
    for line in _lines(text):
        match = _LIST_GPU.match(line)
        if match:
            _close_list_gpu(gpus, migs)
            migs = []
            index = int(match.group(1))
            gpus.append(
                Gpu(
                    nvml_index=index,
                    uuid=match.group(3),
                    pci_bus_id=None,
                    name=match.group(2).strip(),
                    errors=("nvidia-smi -L gives no PCI bus id",),
                )
            )
            continue
        mig = _LIST_MIG.match(line)
        if mig and gpus:
            migs.append(_list_mig(mig.group(3), mig.group(1), int(mig.group(2))))
    _close_list_gpu(gpus, migs)
    return make_host(gpus, source, "nvidia-smi -L")


def _list_mig(uuid: str, profile: str, index: int) -> MigDevice:
    gi = ci = None
    legacy = re.match(r"^MIG-GPU-[0-9A-Fa-f-]+/(\d+)/(\d+)$", uuid)
    if legacy:  # pre-R470: MIG-GPU-<gpu uuid>/<gi>/<ci>
        gi, ci = int(legacy.group(1)), int(legacy.group(2))
    return MigDevice(uuid=uuid, gi=gi, ci=ci, index=index, profile=profile)


def _close_list_gpu(gpus: list[Gpu], migs: list[MigDevice]) -> None:
    if gpus and migs:
        gpus[-1] = replace(gpus[-1], mig_mode=True, mig_devices=tuple(migs))


# --- nvidia-smi --query-gpu --format=csv -------------------------------------------------------


@dataclass
class _Csv:
    columns: dict[str, int]  # field name -> column position
    rows: list[list[str]] = field(default_factory=list)


def _split_csv(line: str) -> list[str]:
    return [cell.strip() for cell in line.split(",")]


def _field_name(header_cell: str) -> str:
    return re.sub(r"\s*\[.*?\]\s*$", "", header_cell.strip()).lower()


def _find_csv(lines: list[str]) -> _Csv | None:
    """Locate the CSV block: a header naming index + uuid/pci.bus_id, or rows of that shape."""
    for pos, line in enumerate(lines):
        cells = [_field_name(c) for c in _split_csv(line)]
        if "index" in cells and ("uuid" in cells or "pci.bus_id" in cells):
            csv = _Csv({name: i for i, name in enumerate(cells)})
            csv.rows = _csv_rows(lines[pos + 1 :], len(cells))
            return csv if csv.rows else None
    rows = [
        _split_csv(line)
        for line in lines
        if "," in line and (re.search(_UUID, line) or re.search(_BUS, line))
    ]
    if not rows or len({len(r) for r in rows}) != 1:
        return None
    columns = _infer_columns(rows)
    if "index" not in columns or not ({"uuid", "pci.bus_id"} & set(columns)):
        return None
    return _Csv(columns, rows)


def _csv_rows(lines: list[str], width: int) -> list[list[str]]:
    rows = []
    for line in lines:
        cells = _split_csv(line)
        if len(cells) == width and cells[0]:
            rows.append(cells)
        elif rows:
            break
    return rows


def _infer_columns(rows: list[list[str]]) -> dict[str, int]:
    """``noheader`` CSV: recognise uuid / bus id / index / name columns by their values."""
    columns: dict[str, int] = {}
    for col in range(len(rows[0])):
        values = [r[col] for r in rows]
        if "uuid" not in columns and all(re.fullmatch(_UUID, v) for v in values):
            columns["uuid"] = col
        elif "pci.bus_id" not in columns and all(re.fullmatch(_BUS, v) for v in values):
            columns["pci.bus_id"] = col
        elif (
            "index" not in columns
            and all(v.isdigit() for v in values)
            and len({int(v) for v in values}) == len(values)
            and max(int(v) for v in values) < 64
        ):
            # NOTE: heuristic - the first column of distinct small integers is the index.
            columns["index"] = col
        elif "name" not in columns and all(re.search(r"[A-Za-z]", v) for v in values):
            columns["name"] = col
    return columns


def _parse_csv(text: str, source: str) -> Host:
    csv = _find_csv(_lines(text))
    if csv is None:
        raise InputError(
            f"{source}: nvidia-smi CSV needs at least the index and uuid or pci.bus_id columns"
        )

    def cell(row: list[str], name: str) -> str | None:
        pos = csv.columns.get(name)
        if pos is None or pos >= len(row):
            return None
        value = row[pos]
        return None if value in ("", "[N/A]", "N/A", "[Not Supported]") else value

    gpus = []
    drivers = set()
    for row in csv.rows:
        raw_index = cell(row, "index")
        if raw_index is None or not raw_index.isdigit():
            raise InputError(f"{source}: CSV row {', '.join(row)!r} has no GPU index")
        index = int(raw_index)
        raw_bus = cell(row, "pci.bus_id")
        bus = bus_id(raw_bus)
        if raw_bus and bus is None:
            raise InputError(f"{source}: CSV pci.bus_id {raw_bus!r} is not a PCI bus id")
        errors = []
        if bus is None:
            errors.append("the CSV has no pci.bus_id column")
        uuid = cell(row, "uuid")
        if uuid is None:
            errors.append("the CSV has no uuid column")
        if cell(row, "driver_version"):
            drivers.add(cell(row, "driver_version"))
        cc = cell(row, "compute_cap")
        gpus.append(
            Gpu(
                nvml_index=index,
                uuid=uuid or unknown_uuid(index),
                pci_bus_id=bus,
                name=cell(row, "name"),
                memory_mib=leading_int(cell(row, "memory.total")),
                compute_capability=cc,
                mig_mode=(cell(row, "mig.mode.current") or "").lower() == "enabled",
                minor_number=leading_int(cell(row, "minor_number")),
                errors=tuple(errors),
            )
        )
    driver = drivers.pop() if len(drivers) == 1 else None
    return make_host(gpus, source, "nvidia-smi --query-gpu", driver_version=driver)


# --- the default nvidia-smi table --------------------------------------------------------------


def _parse_table(text: str, source: str) -> Host:
    lines = _lines(text)
    driver = cuda = None
    gpus: list[Gpu] = []
    migs: dict[int, list[MigDevice]] = {}
    procs: dict[int, list[GpuProcess]] = {}
    section = "gpus"
    for pos, line in enumerate(lines):
        head = _TABLE_HEAD.search(line)
        if head:
            driver = head.group(2)
            cuda = head.group(3) if head.group(3) not in (None, "N/A") else None
            continue
        if "MIG devices:" in line:
            section = "mig"
            continue
        if "Processes:" in line:
            section = "procs"
            continue
        if section == "gpus":
            gpu = _table_gpu(line, lines[pos + 1 : pos + 3])
            if gpu is not None:
                gpus.append(gpu)
        elif section == "mig":
            match = _TABLE_MIGDEV.match(line)
            if match:
                idx, gi, ci, dev = (int(match.group(i)) for i in range(1, 5))
                migs.setdefault(idx, []).append(
                    MigDevice(
                        uuid=f"{UNKNOWN_UUID_PREFIX}gpu{idx}-gi{gi}-ci{ci}",
                        gi=gi,
                        ci=ci,
                        index=dev,
                        memory_mib=int(match.group(6)),
                    )
                )
        else:
            row = _table_process_row(line)
            if row:
                procs.setdefault(row[0], []).append(row[1])
    has_proc_table = any("Processes:" in line for line in lines)
    gpus = [_table_finish(g, migs, procs, has_proc_table) for g in gpus]
    return make_host(gpus, source, "nvidia-smi", driver_version=driver, cuda_driver_version=cuda)


def _table_gpu(line: str, following: list[str]) -> Gpu | None:
    row = _table_gpu_row(line)
    if row is None:
        return None
    index, name, bus = row  # old layouts truncate long names: "NVIDIA A100-SXM..."
    memory = mig_mode = None
    for nxt in following:
        mem = _TABLE_MEM.search(nxt)
        if mem and memory is None:
            memory = int(mem.group(2))
        cells = _cells(nxt)
        if nxt.startswith("|") and not any(cells[:-1]) and cells[-1] in _MIG_MODES:
            mig_mode = cells[-1]
    return Gpu(
        nvml_index=index,
        uuid=unknown_uuid(index),
        pci_bus_id=bus_id(bus),
        name=name or None,
        memory_mib=memory,
        mig_mode=mig_mode == "Enabled",
        errors=("the nvidia-smi table gives no UUID (use nvidia-smi -L or -q -x)",),
    )


def _table_finish(
    gpu: Gpu,
    migs: dict[int, list[MigDevice]],
    procs: dict[int, list[GpuProcess]],
    has_proc_table: bool,
) -> Gpu:
    mig = tuple(migs.get(gpu.nvml_index, ()))
    return replace(
        gpu,
        mig_mode=gpu.mig_mode or bool(mig),
        mig_devices=mig,
        processes=tuple(procs.get(gpu.nvml_index, ())) if has_proc_table else None,
    )
