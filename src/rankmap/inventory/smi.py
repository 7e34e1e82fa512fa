"""Pasted ``nvidia-smi`` output -> :class:`~rankmap.model.Host` list, whatever the form.

One tolerant reader per form (samples and sources: reference/nvidia_smi_formats.md):

=============  ==================================================  ============================
format         reader                                              shows
=============  ==================================================  ============================
``smi-xml``    ``nvidia-smi -q -x``, also cut off (smi_xml)        bus id, UUID, MIG GI/CI
``smi-q``      ``nvidia-smi -q`` text, whole or part (smi_q)       bus id, UUID, MIG GI/CI
``smi-table``  the default table, every layout (smi_table)         bus id, MIG GI/CI, processes
``smi-list``   ``nvidia-smi -L`` (smi_list)                        UUID, MIG UUIDs
``smi-csv``    ``--query-gpu=... --format=csv`` (smi_csv)          what was queried
=============  ==================================================  ============================

The paste is normalised first (:mod:`rankmap.inventory.normalise`: log prefixes, markdown and
chat renderings, flattened tables); the form is then recognised from the content, wherever it
stands in the paste. Several printouts become several hosts (:mod:`.smi_hosts`). What a form
does not show is left unknown and said in ``Gpu.errors``; nothing is invented.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rankmap.errors import InputError
from rankmap.inventory.normalise import PasteLine, paste_lines
from rankmap.inventory.smi_common import BUS
from rankmap.inventory.smi_csv import looks_like_csv, read_csv
from rankmap.inventory.smi_hosts import Listing, hosts_from_listings
from rankmap.inventory.smi_list import looks_like_list, read_list
from rankmap.inventory.smi_q import looks_like_q, read_q
from rankmap.inventory.smi_table import looks_like_table, read_table
from rankmap.inventory.smi_window import windows
from rankmap.inventory.smi_xml import looks_like_xml, read_xml
from rankmap.model import Host

FORMS_READ = (
    "profile JSON, nvidia-smi -q -x XML, nvidia-smi -q text, the nvidia-smi table, "
    "nvidia-smi -L or nvidia-smi --query-gpu CSV"
)
# Something every form prints and no rendering removes; text without any is not read further.
_MARKERS = (
    "NVIDIA-SMI",
    "(UUID",
    "<nvidia_smi_log",
    "NVSMI LOG",
    "Product Name",
    "--query-gpu",
    "pci.bus_id",
    "GPU-",
)
_BUS_ANYWHERE = re.compile(BUS)
_Reader = Callable[[list[PasteLine], str], list[Listing]]
_READERS: tuple[tuple[str, Callable[[list[PasteLine]], bool], _Reader], ...] = (
    ("smi-xml", looks_like_xml, read_xml),
    ("smi-q", looks_like_q, lambda lines, source: read_q(lines)),
    ("smi-table", looks_like_table, lambda lines, source: read_table(lines)),
    ("smi-list", looks_like_list, lambda lines, source: read_list(lines)),
    ("smi-csv", looks_like_csv, read_csv),
)


def detect_text_format(text: str) -> str:
    """The first form found in ``text``: ``smi-xml`` ... ``smi-csv``, or ``unknown``."""
    lines = paste_lines(text)
    return next((name for name, looks, _ in _READERS if looks(lines)), "unknown")


def parse(fmt: str, text: str, *, source: str) -> list[Host]:
    """Read ``text`` as format ``fmt`` (``InputError`` when it shows no GPU in that form)."""
    readers = {name: reader for name, _, reader in _READERS}
    if fmt not in readers:
        raise InputError(f"{source}: unknown nvidia-smi format {fmt!r}")
    hosts = hosts_from_listings(
        _checked(fmt, readers[fmt](paste_lines(text), source), source), source
    )
    if not hosts:
        raise InputError(f"{source}: {fmt} output lists no GPU")
    return hosts


def parse_paste(text: str, *, source: str) -> list[Host]:
    """Every host in a paste of nvidia-smi output; ``InputError`` (one line) when there is none.

    Every form found is read; printouts of one machine in two forms are joined (smi_hosts).
    """
    if not _may_hold_output(text):
        raise InputError(f"{source}: not a machine description (rankmap reads {FORMS_READ})")
    lines = paste_lines(text)
    seen: list[str] = []
    listings: list[Listing] = []
    for name, looks, reader in _READERS:
        if looks(lines):
            seen.append(name)
            listings += _checked(name, reader(lines, source), source)
    hosts = hosts_from_listings(listings, source)
    if hosts:
        return hosts
    if seen:
        raise InputError(
            f"{source}: {seen[0]} output lists no GPU (the paste stops before the first one?)"
        )
    raise InputError(f"{source}: not a machine description (rankmap reads {FORMS_READ})")


def read_pastes(text: str, *, source: str = "paste") -> list[Host]:
    """The hosts that nvidia-smi output in ``text`` shows; ``[]`` when it shows none.

    For readers of free text (``explain``): never raises for text that is not nvidia-smi output.
    A big text is read only in the windows around nvidia-smi markers (:mod:`.smi_window`).
    """
    text = windows(text)
    if not text:
        return []
    try:
        return parse_paste(text, source=source)
    except InputError:
        return []


def _may_hold_output(text: str) -> bool:
    """A scan at C speed: most logs hold no nvidia-smi output at all."""
    if any(marker in text for marker in _MARKERS) or "uuid" in text.lower():
        return True
    return _BUS_ANYWHERE.search(text) is not None


def _checked(fmt: str, listings: list[Listing], source: str) -> list[Listing]:
    for listing in listings:
        indices = [g.nvml_index for g in listing.gpus]
        if len(set(indices)) != len(indices):
            raise InputError(f"{source}: {fmt} output lists a GPU index twice")
    return listings
