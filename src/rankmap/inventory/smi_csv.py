"""``nvidia-smi --query-gpu=... --format=csv`` -> a listing (reference/nvidia_smi_formats.md §4).

Any column order and any extra fields; unit suffixes in the header (``memory.total [MiB]``) and
in values (``81559 MiB``); ``noheader`` output takes its field names from the ``--query-gpu=``
command line when the paste shows it, else recognises uuid / bus id / index columns by shape.
Rows are read where they stand, also inside a debug print of a Python list (``['0, GPU-...']``).
A header is recognised when it repeats the ``--query-gpu=`` names of the paste, or names two
query fields one of which is ``index``, ``uuid`` or ``pci.bus_id``. Columns that were not asked
for stay unknown and each GPU says so; without an ``index`` column the row order is the NVML
index (nvidia-smi prints GPUs in NVML order).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rankmap.errors import InputError
from rankmap.inventory.normalise import PasteLine
from rankmap.inventory.smi_common import BUS, UUID, bus_id, leading_int, shown_uuid
from rankmap.inventory.smi_hosts import Listing, name_from_paste
from rankmap.model import Gpu
from rankmap.numbers import saturating_int

_MAX_INDEX_DIGITS = 6  # an NVML index of a real machine; more digits is no index (and int() of
# over 4,300 digits raises)

FORM = "nvidia-smi --query-gpu"
_ALIASES = {"gpu_uuid": "uuid", "gpu_name": "name", "gpu_bus_id": "pci.bus_id"}
_KNOWN = frozenset(
    {"index", "uuid", "pci.bus_id", "name", "memory.total", "driver_version", "serial"}
)
_QUERY = re.compile(r"--query-gpu[= ]([\w.,]+)")
_QUOTED = re.compile(r"'([^'\n]{3,})'|\"([^\"\n]{3,})\"")
_HEADER_HINT = re.compile(r"uuid|bus_id|index", re.IGNORECASE)
_MISSING = ("", "[N/A]", "N/A", "[Not Supported]")


@dataclass
class _Csv:
    columns: dict[str, int]  # field name -> column position
    rows: list[list[str]] = field(default_factory=list)
    first_line: int = 0


def _split(line: str) -> list[str]:
    return [cell.strip() for cell in line.split(",")]


def _field(header_cell: str) -> str:
    name = re.sub(r"\s*\[.*?\]\s*$", "", header_cell.strip()).lower()
    return _ALIASES.get(name, name)


def looks_like_csv(lines: list[PasteLine]) -> bool:
    return _find(lines) is not None


def _find(lines: list[PasteLine]) -> _Csv | None:
    """The CSV block: its header (or the ``--query-gpu=`` names and rows of that width)."""
    query = next((m for x in lines if (m := _QUERY.search(x.text))), None)
    asked = [_field(c) for c in query.group(1).split(",") if c] if query else []
    for pos, line in enumerate(lines):
        if not _HEADER_HINT.search(line.text) and not (asked and "," not in line.text):
            continue
        cells = [_field(c) for c in _split(line.text)]
        if cells == asked or (_is_header(cells) and {"uuid", "pci.bus_id", "index"} & set(cells)):
            found = _Csv({name: i for i, name in reversed(list(enumerate(cells)))})
            found.rows = _rows(lines[pos + 1 :], len(cells))
            found.first_line = pos
            return found if found.rows else None
    if {"uuid", "pci.bus_id"} & set(asked):  # noheader: the command line names the columns
        found = _Csv({name: i for i, name in reversed(list(enumerate(asked)))})
        found.rows = _rows(lines, len(asked), anywhere=True)
        return found if found.rows else None
    return _by_shape(lines)


def _is_header(cells: list[str]) -> bool:
    """Field names, not values: dotted/underscored words, at least two nvidia-smi ones."""
    return len(set(cells) & _KNOWN) >= 2 and all(re.fullmatch(r"[\w.]+", c) for c in cells)


def _rows(lines: list[PasteLine], width: int, *, anywhere: bool = False) -> list[list[str]]:
    rows: list[list[str]] = []
    for line in lines:
        candidates = [line.text]
        if anywhere:
            candidates += [a or b for a, b in _QUOTED.findall(line.text)]
        cells = next((c for c in map(_split, candidates) if len(c) == width and c[0]), None)
        if cells is not None and not _is_header([_field(c) for c in cells]):
            rows.append(cells)
        elif rows and not anywhere:
            break
    return rows


def _by_shape(lines: list[PasteLine]) -> _Csv | None:
    rows = [
        _split(x.text)
        for x in lines
        if "," in x.text and (re.search(UUID, x.text) or re.search(BUS, x.text))
    ]
    if not rows or len({len(r) for r in rows}) != 1 or len(rows[0]) < 2:
        return None
    columns = _infer_columns(rows)
    if "index" not in columns or not ({"uuid", "pci.bus_id"} & set(columns)):
        return None
    return _Csv(columns, rows)


def _infer_columns(rows: list[list[str]]) -> dict[str, int]:
    """``noheader`` CSV: recognise uuid / bus id / index / name columns by their values."""
    columns: dict[str, int] = {}
    for col in range(len(rows[0])):
        values = [r[col] for r in rows]
        if "uuid" not in columns and all(re.fullmatch(UUID, v) for v in values):
            columns["uuid"] = col
        elif "pci.bus_id" not in columns and all(re.fullmatch(BUS, v) for v in values):
            columns["pci.bus_id"] = col
        elif (
            "index" not in columns
            and all(v.isdecimal() for v in values)
            and len({saturating_int(v) for v in values}) == len(values)
            and max(saturating_int(v) for v in values) < 64
        ):
            # NOTE: heuristic - the first column of distinct small integers is the index.
            columns["index"] = col
        elif "name" not in columns and all(re.search(r"[A-Za-z]", v) for v in values):
            columns["name"] = col
    return columns


def read_csv(lines: list[PasteLine], source: str) -> list[Listing]:
    """The query CSV of the paste as one listing; ``InputError`` for a bad bus id."""
    found = _find(lines)
    if found is None:
        return []

    def cell(row: list[str], name: str) -> str | None:
        pos = found.columns.get(name)
        if pos is None or pos >= len(row):
            return None
        return None if row[pos] in _MISSING else row[pos]

    listing = Listing(FORM, first_line=found.first_line)
    listing.hostname = name_from_paste(lines, found.first_line, 0)
    drivers = set()
    for order, row in enumerate(found.rows):
        raw_index = cell(row, "index")
        notes = []
        if raw_index is None:
            notes.append("the CSV has no index column; its row order is taken as the NVML index")
        elif not raw_index.isdecimal() or len(raw_index) > _MAX_INDEX_DIGITS:
            raise InputError(f"{source}: CSV row {', '.join(row)[:120]!r} has no GPU index")
        index = int(raw_index) if raw_index is not None else order
        raw_bus = cell(row, "pci.bus_id")
        bus = bus_id(raw_bus)
        if raw_bus and bus is None:
            raise InputError(f"{source}: CSV pci.bus_id {raw_bus!r} is not a PCI bus id")
        if bus is None:
            notes.append("the CSV has no pci.bus_id column")
        uuid, uuid_notes = shown_uuid(cell(row, "uuid"), index, "the CSV has no uuid column")
        if cell(row, "driver_version"):
            drivers.add(cell(row, "driver_version"))
        listing.gpus.append(
            Gpu(
                nvml_index=index,
                uuid=uuid,
                pci_bus_id=bus,
                name=cell(row, "name"),
                memory_mib=leading_int(cell(row, "memory.total")),
                compute_capability=cell(row, "compute_cap"),
                mig_mode=(cell(row, "mig.mode.current") or "").lower() == "enabled",
                minor_number=leading_int(cell(row, "minor_number")),
                errors=tuple(notes + uuid_notes),
            )
        )
    listing.driver_version = drivers.pop() if len(drivers) == 1 else None
    return [listing]
