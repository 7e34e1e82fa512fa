"""Report sections as rich renderables. Pure apart from the console passed in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rankmap.findings import Finding, Report, Severity
from rankmap.model import Inventory, Placement

if TYPE_CHECKING:
    from rich.console import Console

_SEVERITY_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}
_VERDICT_STYLE = {"ok": "bold green", "warning": "bold yellow", "error": "bold red"}
MAX_PLACEMENT_ROWS = 64


def esc(text: object) -> str:
    """Escape rich markup in user-controlled text."""
    from rich.markup import escape

    return escape(str(text))


def render_verdict(console: Console, report: Report, subject: str) -> None:
    """``rankmap check: ERROR — 2 errors, 1 warning`` headline."""
    counts = {s: sum(1 for f in report.findings if f.severity is s) for s in Severity}
    parts = [f"{n} {s.value}{'s' if n != 1 else ''}" for s, n in counts.items() if n]
    style = _VERDICT_STYLE[report.verdict]
    tail = ", ".join(parts) if parts else "no findings"
    console.print(f"[{style}]{report.verdict.upper()}[/] {esc(subject)} — {tail}")


def render_findings(console: Console, findings: Sequence[Finding]) -> None:
    """Every finding: code, severity, title, detail, evidence and fix."""
    if not findings:
        console.print("[green]No findings.[/]")
        return
    for f in findings:
        style = _SEVERITY_STYLE[f.severity]
        console.print(
            f"[{style}]{f.severity.value.upper():7}[/] [bold]{f.code}[/] {esc(f.title)}  "
            f"[dim]({f.category})[/]"
        )
        if f.detail:
            console.print(f"        {esc(f.detail)}")
        for line in f.evidence[:5]:
            console.print(f"        [dim]> {esc(line)}[/]")
        if f.fix:
            console.print(f"        [green]fix:[/] {esc(f.fix)}")


def _cell(value: object) -> str:
    return "-" if value is None else esc(value)


def render_placements(
    console: Console, placements: Sequence[Placement], *, title: str = "Rank map"
) -> None:
    """The rank -> node -> GPU table; long maps show the first and last rows."""
    from rich.table import Table

    if not placements:
        return
    rows = sorted(placements, key=lambda p: p.rank)
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for col in ("rank", "local", "node", "cuda", "nvml", "pci_bus_id", "uuid", "note"):
        table.add_column(col, overflow="fold")
    shown: Iterable[Placement | None]
    if len(rows) > MAX_PLACEMENT_ROWS:
        half = MAX_PLACEMENT_ROWS // 2
        shown = [*rows[:half], None, *rows[-half:]]
    else:
        shown = rows
    for p in shown:
        if p is None:
            table.add_row(
                "…", "", f"{len(rows) - MAX_PLACEMENT_ROWS} more ranks", "", "", "", "", ""
            )
            continue
        uuid = p.mig.uuid if p.mig else p.uuid
        table.add_row(
            str(p.rank),
            _cell(p.local_rank),
            _cell(p.node),
            _cell(p.cuda_index),
            _cell(p.nvml_index),
            _cell(p.pci_bus_id),
            _cell(uuid),
            esc(p.error or ""),
        )
    console.print(table)


def render_inventory(console: Console, inventory: Inventory) -> None:
    """One table per host: NVML index, bus id, UUID, name, memory, MIG."""
    from rich.table import Table

    for host in inventory.hosts:
        title = f"{host.hostname}: {len(host.gpus)} GPU(s)"
        if host.driver_version:
            title += f", driver {host.driver_version}"
        if host.cuda_driver_version:
            title += f" (CUDA {host.cuda_driver_version})"
        table = Table(title=esc(title), title_justify="left", show_edge=False, pad_edge=False)
        for col in ("nvml", "pci_bus_id", "uuid", "name", "memory", "mig"):
            table.add_column(col, overflow="fold")
        for g in host.gpus:
            mig = f"on, {len(g.mig_devices)} instance(s)" if g.mig_mode else "off"
            mem = f"{g.memory_mib} MiB" if g.memory_mib is not None else "-"
            table.add_row(
                str(g.nvml_index), _cell(g.pci_bus_id), esc(g.uuid), _cell(g.name), mem, mig
            )
        console.print(table)


def render_visible(
    console: Console, visible: Sequence[dict[str, Any]], notes: Sequence[str]
) -> None:
    """The logical -> physical view of one process."""
    from rich.table import Table

    table = Table(
        title="Visible to this process (CUDA order)",
        title_justify="left",
        show_edge=False,
        pad_edge=False,
    )
    for col in ("cuda", "nvml", "pci_bus_id", "uuid"):
        table.add_column(col, overflow="fold")
    for d in visible:
        table.add_row(
            f"cuda:{d['cuda_index']}",
            str(d["nvml_index"]),
            _cell(d.get("pci_bus_id")),
            esc(d["uuid"]),
        )
    if visible:
        console.print(table)
    else:
        console.print("[bold]Visible to this process:[/] no CUDA device")
    for note in notes:
        console.print(f"  [dim]note:[/] {esc(note)}")


def render_summary(console: Console, report: Report, subject: str) -> None:
    """The verdict line and the findings (``run``'s preflight and diagnosis)."""
    render_verdict(console, report, subject)
    render_findings(console, report.ordered_findings())
