"""Text of ``rankmap doctor``: inventory, processes, the visible view, env, identity, versions."""

from __future__ import annotations

from typing import Any

from rankmap.findings import Report
from rankmap.render.console import Screen
from rankmap.render.text import esc


def render_doctor(report: Report, ctx: Screen) -> None:
    from rankmap.model import Inventory
    from rankmap.render.text import render_findings, render_verdict

    console = ctx.console()
    sec = report.sections
    hosts = load_hosts_section(sec["inventory"])
    subject = f"doctor: {sec['host_identity'].get('hostname') or '?'} ({sec['source']})"
    if sec["simulated"]:
        subject += ", simulated"
    render_verdict(console, report, subject)
    console.print()
    if hosts:
        from rankmap.render.text import render_inventory

        render_inventory(console, Inventory(tuple(hosts)))
    else:
        console.print("[bold]GPU inventory:[/] none (NVML not available)")
    for note in sec["inventory_notes"]:
        console.print(f"  [dim]note:[/] {esc(note)}")
    _render_processes(console, sec["processes"])
    console.print()
    _render_view(console, sec)
    console.print()
    _render_mapping(console, "Launcher / Slurm / MPI variables", sec["launcher_env"])
    _render_mapping(console, "NCCL / CUDA / TORCH variables", sec["gpu_env"])
    _render_identity(console, sec["host_identity"], sec["container"])
    _render_versions(console, sec["versions"])
    console.print()
    console.print("[bold]Findings[/]")
    render_findings(console, report.ordered_findings())


def _render_processes(console: Any, rows: list[dict[str, Any]]) -> None:
    from rankmap.render.text import esc

    for row in rows:
        mem = f", {row['used_memory_mib']} MiB" if row.get("used_memory_mib") is not None else ""
        console.print(
            f"  [yellow]busy:[/] GPU {row['nvml_index']} ({esc(row.get('pci_bus_id') or '-')}): "
            f"pid {row['pid']} {esc(row.get('name') or '?')}{mem}"
        )


def _render_view(console: Any, sec: dict[str, Any]) -> None:
    from rankmap.render.text import esc, render_visible

    vis = sec["visibility"]
    if vis is None:
        console.print("[bold]Visible to this process:[/] unknown (no GPU inventory)")
        return
    cvd = vis["cuda_visible_devices"]
    console.print(
        f"CUDA_VISIBLE_DEVICES={esc(cvd) if cvd is not None else '(unset)'}  "
        f"CUDA_DEVICE_ORDER={vis['cuda_device_order']}"
    )
    render_visible(console, sec["visible_devices"], sec["visible_devices_notes"])


def _render_mapping(console: Any, title: str, values: dict[str, str]) -> None:
    from rankmap.render.text import esc

    if not values:
        console.print(f"[bold]{title}:[/] none set")
        return
    console.print(f"[bold]{title}:[/]")
    for key, value in values.items():
        console.print(f"  {esc(key)}={esc(value)}")


def _render_identity(console: Any, ident: dict[str, Any], container: dict[str, Any]) -> None:
    from rankmap.render.text import esc

    console.print("[bold]Host identity:[/]")
    for key in ("hostname", "boot_id", "machine_id", "nccl_hostid"):
        if ident.get(key):
            console.print(f"  {key}: {esc(ident[key])}")
    console.print(f"  NCCL host-hash input: {esc(ident.get('nccl_host_hash_input') or '?')}")
    kind = container.get("kind")
    console.print(f"  container: {esc(kind or 'none detected')}")
    console.print(f"  [dim]{esc(container['implication'])}[/]")


def _render_versions(console: Any, v: dict[str, Any]) -> None:
    from rankmap.render.text import esc

    def show(value: Any) -> str:
        return esc(value) if value else "-"

    nccl = show(v["nccl_version"]) + (f" ({esc(v['nccl_source'])})" if v["nccl_source"] else "")
    console.print("[bold]Versions:[/]")
    console.print(
        f"  driver {show(v['driver_version'])} (CUDA {show(v['cuda_driver_version'])}) | "
        f"torch {show(v['torch_version'])} (built for CUDA {show(v['torch_cuda_version'])}) | "
        f"NCCL {nccl}"
    )
    if v.get("nccl_note"):
        console.print(f"  [yellow]note:[/] {esc(v['nccl_note'])}")
    style = {"ok": "green", "too_old": "red"}.get(v["verdict"], "dim")
    console.print(f"  verdict: [{style}]{esc(v['verdict'])}[/] - {esc(v['verdict_reason'])}")


def load_hosts_section(inventory: dict[str, Any]) -> list[Any]:
    """The report's ``inventory`` section back as hosts (for rendering)."""
    from rankmap.inventory.profile import parse_profile_json
    from rankmap.render.json import dumps

    if not inventory.get("hosts"):
        return []
    return parse_profile_json(dumps(inventory), source="report")
