"""Render a 64-node (512-rank) HTML rank map in headless Chromium and inspect the DOM.

    PYTHONPATH=src python benchmarks/html_render_check.py [--nodes 64] [--screenshot out.png]

Builds the report directly from Report + Placement (no `check` needed): 8 GPUs per node, one
collision planted on node-05 (ranks 40 and 44 on GPU 0), one out-of-range rank on node-07,
and node-10 / node-11 sharing one NCCL host identity. Exits 0 when Chromium's DOM (after the
inline script ran) shows all of it, 1 otherwise, 77 when no Chromium is installed.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

from rankmap.adapters.output import write_html
from rankmap.findings import Report, finding
from rankmap.inventory import load_machine
from rankmap.model import HostIdentity, Placement

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def build_report(nodes: int = 64, gpus_per_node: int = 8) -> Report:
    """A check-like report of ``nodes`` DGX H100 nodes with planted problems."""
    template = load_machine("dgx-h100")[0]
    hosts, placements = [], []
    for n in range(nodes):
        name = f"node-{n:02d}"
        identity = HostIdentity(
            hostname=name,
            boot_id=f"boot-{n:04d}",
            nccl_hostid="cluster" if name in ("node-10", "node-11") else None,
        )
        hosts.append(replace(template, hostname=name, identity=identity).to_dict())
        for local in range(gpus_per_node):
            rank = n * gpus_per_node + local
            gpu = template.gpus[local]
            if name == "node-05" and local == 4:
                gpu = template.gpus[0]  # planted collision: rank 44 on GPU 0 with rank 40
            if name == "node-07" and local == 7:
                placements.append(
                    Placement(rank, local, name, 8, error="invalid device ordinal", node_rank=n)
                )
                continue
            placements.append(
                Placement(
                    rank, local, name, local, gpu.nvml_index, gpu.uuid, gpu.pci_bus_id, None, n
                )
            )
    findings = [
        finding(
            "RM101",
            "ranks 40 and 44 share GPU 0 on node-05",
            detail="both resolve to 0000:18:00.0",
            ranks=[40, 44],
            devices=["0000:18:00.0"],
            hosts=["node-05"],
            fix="torch.cuda.set_device(LOCAL_RANK) <script>alert(1)</script>",
        ),
        finding(
            "RM801",
            "node-10 and node-11 share NCCL_HOSTID=cluster",
            hosts=["node-10", "node-11"],
        ),
    ]
    return Report(
        command="check",
        findings=findings,
        placements=placements,
        sections={"inventory": {"hosts": hosts}},
    )


class DomStats(HTMLParser):
    """Counts what the check needs from the rendered DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.nodes = self.problem_nodes = self.open_nodes = self.gpus = self.collisions = 0
        self.unplaced = self.ranks = 0
        self.ready = False
        self.scripts_injected = 0
        self.ids: dict[str, str] = {}
        self._capture: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        cls = a.get("class", "").split()
        if tag == "body" and a.get("data-ready") == "1":
            self.ready = True
        if tag == "details" and "node" in cls:
            self.nodes += 1
            self.problem_nodes += "problem" in cls
            self.open_nodes += "open" in a
        if tag == "div" and "gpu" in cls:
            self.gpus += "unplaced" not in cls
            self.collisions += "collision" in cls
            self.unplaced += "unplaced" in cls
        if tag == "span" and "rank" in cls:
            self.ranks += 1
        if tag == "script" and a.get("src"):
            self.scripts_injected += 1
        if tag == "b" and a.get("id"):
            self._capture = a["id"]

    def handle_data(self, data: str) -> None:
        if self._capture:
            self.ids[self._capture] = data
            self._capture = None


def find_chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def dump_dom(chromium: str, html_path: Path, screenshot: Path | None = None) -> str:
    """Chromium's serialised DOM after load (scripts ran)."""
    with tempfile.TemporaryDirectory(prefix="rankmap-chromium-") as profile:
        flags = [*CHROMIUM_FLAGS, f"--user-data-dir={profile}"]
        if screenshot is not None:
            subprocess.run(
                [chromium, *flags, f"--screenshot={screenshot}", "--window-size=1400,2000",
                 html_path.as_uri()],
                capture_output=True, timeout=120, check=False,
            )  # fmt: skip
        done = subprocess.run(
            [chromium, *flags, "--dump-dom", html_path.as_uri()],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    return done.stdout


def check(stats: DomStats, nodes: int) -> list[str]:
    """Problems found in the rendered DOM (empty: all good)."""
    want = {
        "inline script ran (body data-ready=1)": stats.ready,
        f"{nodes} node sections": stats.nodes == nodes,
        f"{nodes * 8} GPU cells": stats.gpus == nodes * 8,
        "1 collision cell": stats.collisions == 1,
        "1 out-of-range cell": stats.unplaced == 1,
        "problem nodes open, healthy closed": stats.open_nodes == stats.problem_nodes == 4,
        "escaped fix text (no injected <script>)": stats.scripts_injected == 0,
        f"{nodes * 8} rank chips": stats.ranks == nodes * 8,
        "filter shows every node": stats.ids.get("shown") == str(nodes),
    }
    return [name for name, ok in want.items() if not ok]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--screenshot", type=Path)
    parser.add_argument("--keep", type=Path, help="also keep the HTML file here")
    args = parser.parse_args()
    chromium = find_chromium()
    if chromium is None:
        print("no chromium found (apt-get install -y chromium); skipping", file=sys.stderr)
        return 77
    with tempfile.TemporaryDirectory(prefix="rankmap-html-") as tmp:
        path = Path(args.keep or Path(tmp) / "report.html")
        start = time.perf_counter()
        write_html(build_report(args.nodes), str(path))
        render_s = time.perf_counter() - start
        dom = dump_dom(chromium, path.resolve(), args.screenshot)
        size = path.stat().st_size
    stats = DomStats()
    stats.feed(dom)
    problems = check(stats, args.nodes)
    print(
        f"html {size} bytes, written in {render_s:.3f}s; chromium DOM: {stats.nodes} nodes, "
        f"{stats.gpus} GPUs, {stats.ranks} ranks, {stats.collisions} collision, "
        f"{stats.unplaced} out-of-range, {stats.open_nodes} open, ready={stats.ready}"
    )
    for p in problems:
        print(f"FAILED: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
