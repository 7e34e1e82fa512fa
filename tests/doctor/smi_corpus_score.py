"""Score one corpus paste (``tests/data/smi/corpus/<id>.*``) against its hand-made truth.

Shared by ``tests/doctor/test_smi_corpus.py`` and ``benchmarks/smi_corpus.py`` (one authority
for what "right" means). A paste is right when, for every host in paste order:

* the GPU count, each GPU's NVML index and canonical PCI bus id (``None`` where the truth has
  none) match;
* a UUID the truth shows in full is read exactly; a UUID the paste does not show, or shows cut
  or masked (``GPU-c084...``), is the ``unknown-uuid:`` placeholder with a note that says so;
* MIG devices match in count, and in UUID / GI / CI wherever the truth gives them;
* several hosts carry the names the paste gives them (else ``<stem>-1``, ``<stem>-2``); a
  single-host paste keeps the file stem as its name.

A negative (not nvidia-smi output), and a paste whose truth shows no GPU at all, must be refused
with an ``InputError`` and make ``read_pastes`` return ``[]``. Any other exception is a crash.
"""

from __future__ import annotations

import csv
import json
import re
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rankmap.errors import InputError
from rankmap.inventory import parse_machine_text, read_pastes
from rankmap.inventory.smi_common import UNKNOWN_UUID_PREFIX
from rankmap.model import Host
from rankmap.pci import try_normalize_bus_id

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "smi" / "corpus"
MANIFEST = ROOT / "benchmarks" / "corpora" / "smi_pastes.tsv"
_FULL_UUID = re.compile(r"^(GPU|MIG)-[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


@dataclass(frozen=True)
class Entry:
    id: str
    form: str
    split: str


@dataclass(frozen=True)
class Score:
    entry: Entry
    problems: tuple[str, ...]
    crashed: bool = False

    @property
    def right(self) -> bool:
        return not self.problems


def manifest() -> list[Entry]:
    with MANIFEST.open(encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    return [Entry(r["id"], r["form"], r["split"]) for r in rows]


def paste_path(paste_id: str) -> Path:
    for ext in (".txt", ".xml", ".csv"):
        path = CORPUS / f"{paste_id}{ext}"
        if path.exists():
            return path
    raise FileNotFoundError(paste_id)


def score(entry: Entry) -> Score:
    path = paste_path(entry.id)
    truth = json.loads((CORPUS / f"{entry.id}.truth.json").read_text(encoding="utf-8"))
    text = path.read_text(encoding="utf-8")
    want_gpus = sum(len(h["gpus"]) for h in truth["hosts"])
    try:
        found_in_explain = read_pastes(text, source=str(path))
        hosts = parse_machine_text(text, source=str(path))
    except InputError as exc:
        if entry.form == "negative" or want_gpus == 0:
            return Score(entry, () if not found_in_explain else ("read_pastes found hosts",))
        return Score(entry, (f"refused: {exc.message}",))
    except Exception:  # noqa: BLE001 - a crash is what this scorer reports
        return Score(entry, (traceback.format_exc(limit=3),), crashed=True)
    if entry.form == "negative" or want_gpus == 0:
        return Score(entry, (f"read {len(hosts)} host(s) from a paste that has no GPU",))
    problems = _compare_hosts(hosts, truth["hosts"], stem=path.stem)
    if [h.hostname for h in found_in_explain] != [h.hostname for h in hosts]:
        problems.append("read_pastes disagrees with --machine")
    return Score(entry, tuple(problems))


def _compare_hosts(hosts: list[Host], want: list[dict[str, Any]], *, stem: str) -> list[str]:
    if len(hosts) != len(want):
        return [f"{len(hosts)} hosts, want {len(want)}"]
    problems = []
    for pos, (host, want_host) in enumerate(zip(hosts, want, strict=True)):
        expected_name = stem if len(want) == 1 else want_host["name"] or f"{stem}-{pos + 1}"
        if host.hostname != expected_name:
            problems.append(f"host {pos}: named {host.hostname!r}, want {expected_name!r}")
        problems += [f"host {pos}: {p}" for p in _compare_gpus(host, want_host["gpus"])]
    return problems


def _compare_gpus(host: Host, want: list[dict[str, Any]]) -> list[str]:
    if len(host.gpus) != len(want):
        return [f"{len(host.gpus)} GPUs, want {len(want)}"]
    problems = []
    for gpu, want_gpu in zip(host.gpus, want, strict=True):
        where = f"GPU {want_gpu['index']}"
        if gpu.nvml_index != want_gpu["index"]:
            problems.append(f"{where}: index {gpu.nvml_index}")
        want_bus = want_gpu["pci_bus_id"]
        if gpu.pci_bus_id != (try_normalize_bus_id(want_bus) if want_bus else None):
            problems.append(f"{where}: bus id {gpu.pci_bus_id}, want {want_bus}")
        problems += [f"{where}: {p}" for p in _uuid_problems(gpu.uuid, want_gpu["uuid"], gpu)]
        got_migs, want_migs = gpu.mig_devices, want_gpu["mig_devices"]
        if len(got_migs) != len(want_migs):
            problems.append(f"{where}: {len(got_migs)} MIG devices, want {len(want_migs)}")
            continue
        for mig, want_mig in zip(got_migs, want_migs, strict=True):
            full = bool(want_mig["uuid"] and _FULL_UUID.match(want_mig["uuid"]))
            if full and mig.uuid != want_mig["uuid"]:
                problems.append(f"{where}: MIG uuid {mig.uuid}, want {want_mig['uuid']}")
            for key in ("gi", "ci"):
                if want_mig[key] is not None and getattr(mig, key) != want_mig[key]:
                    problems.append(f"{where}: MIG {key} {getattr(mig, key)}")
    return problems


def _uuid_problems(got: str, want: str | None, gpu: Any) -> list[str]:
    if want is not None and _FULL_UUID.match(want):
        return [] if got == want else [f"uuid {got}, want {want}"]
    if not got.startswith(UNKNOWN_UUID_PREFIX):
        return [f"uuid {got}: the paste shows no full UUID, want the placeholder"]
    if not any("uuid" in note.lower() for note in gpu.errors):
        return ["placeholder UUID without a note saying why"]
    return []


def score_all() -> list[Score]:
    return [score(entry) for entry in manifest()]
