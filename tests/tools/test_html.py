"""write_html: DOM checks with html.parser, escaping, large reports; Chromium render (slow)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path

import pytest

from rankmap.adapters.output import write_html
from rankmap.errors import InputError
from rankmap.findings import Report, finding
from rankmap.model import Host, MigRef, Placement
from rankmap.render.html import render_html
from rankmap.render.html_model import build_grid, compress_ranks

Load = Callable[[str], Host]
ROOT = Path(__file__).resolve().parents[2]


class Dom(HTMLParser):
    """Elements as (tag, attrs) plus all text; tracks <script> bodies."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, {k: v or "" for k, v in attrs}))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)

    def having(self, tag: str, cls: str) -> list[dict[str, str]]:
        return [a for t, a in self.elements if t == tag and cls in a.get("class", "").split()]


def _report(ws: Host) -> Report:
    g = ws.gpus
    placements = [
        Placement(0, 0, "ws-01", 0, 0, g[0].uuid, g[0].pci_bus_id),
        Placement(1, 1, "ws-01", 0, 0, g[0].uuid, g[0].pci_bus_id),  # collision on GPU 0
        Placement(2, 2, "ws-01", 2, 2, g[2].uuid, g[2].pci_bus_id),
        Placement(3, 3, "ws-01", 7, error="invalid device ordinal"),
    ]
    findings = [
        finding(
            "RM101",
            "ranks 0 and 1 share GPU 0 <b>bold</b>",
            ranks=[0, 1],
            hosts=["ws-01"],
            devices=[g[0].pci_bus_id or ""],
            fix='torchrun --nproc-per-node 4 "$@" & <x>',
        ),  # fmt: skip
    ]
    inventory = {"hosts": [ws.to_dict()]}
    return Report("check", findings, placements, {"inventory": inventory})


def test_grid_marks_collisions_and_out_of_range(machine: Load) -> None:
    dom = Dom(render_html(_report(machine("workstation-4gpu"))))
    nodes = dom.having("details", "node")
    assert [n["data-node"] for n in nodes] == ["ws-01"]
    assert "problem" in nodes[0]["class"] and "open" in nodes[0]
    gpus = dom.having("div", "gpu")
    assert len(gpus) == 5  # 4 GPUs + the out-of-range cell
    assert [a["data-gpu"] for a in dom.having("div", "collision")] == ["0"]
    assert len(dom.having("div", "unplaced")) == 1
    assert len(dom.having("span", "rank")) == 4
    assert len(dom.having("div", "idle")) == 2  # GPUs 1 and 3
    text = "".join(dom.text)
    assert "invalid device ordinal" in text and "2 ranks on one GPU" in text


def test_everything_is_escaped_and_nothing_is_fetched(machine: Load) -> None:
    report = _report(machine("workstation-4gpu"))
    report.placements.append(Placement(9, 0, "<img src=x onerror=alert(1)>", 0, 0, "GPU-x"))
    html = render_html(report)
    dom = Dom(html)
    assert not [a for t, a in dom.elements if t == "img"]
    assert "ranks 0 and 1 share GPU 0 <b>bold</b>" in "".join(dom.text)
    assert 'torchrun --nproc-per-node 4 "$@" & <x>' in "".join(dom.text)
    assert not [
        a
        for t, a in dom.elements
        if t in ("script", "link", "img", "iframe") and (a.get("src") or a.get("href"))
    ]
    csp = [
        a
        for t, a in dom.elements
        if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    ]
    assert csp and "default-src 'none'" in csp[0]["content"]
    assert "http://" not in html and "https://" not in html


def test_identity_groups_are_marked(machine: Load) -> None:
    h = machine("dgx-h100")
    a = h.to_dict() | {"hostname": "node-a"}
    b = h.to_dict() | {"hostname": "node-b"}
    report = Report(
        "probe",
        [finding("RM801", "node-a and node-b share NCCL_HOSTID", hosts=["node-a", "node-b"])],
        [Placement(0, 0, "node-a", 0, 0, h.gpus[0].uuid, h.gpus[0].pci_bus_id),
         Placement(1, 0, "node-b", 0, 0, h.gpus[0].uuid, h.gpus[0].pci_bus_id)],
        {"inventory": {"hosts": [a, b]}},
    )  # fmt: skip
    nodes, groups = build_grid(report)
    assert groups == [["node-a", "node-b"]]
    assert [n.identity_group for n in nodes] == [1, 1]
    dom = Dom(render_html(report))
    assert len(dom.having("span", "b-id")) == 2
    assert "identity group 1: node-a, node-b" in "".join(dom.text)


def test_mig_slices_of_one_gpu_collide(machine: Load) -> None:
    host = machine("a100-mig")
    gpu = host.gpus[0]
    placements = [
        Placement(
            r, r, "mig-01", 0, 0, m.uuid, gpu.pci_bus_id, MigRef(m.uuid, gpu.uuid, m.gi, m.ci)
        )
        for r, m in enumerate(gpu.mig_devices[:2])
    ]
    nodes, _ = build_grid(
        Report("check", [], placements, {"inventory": {"hosts": [host.to_dict()]}})
    )
    assert len(nodes[0].gpus) == 1 and nodes[0].collisions == 1


def test_placements_without_inventory_and_thousands_of_ranks() -> None:
    placements = [
        Placement(r, r % 8, f"node-{r // 8:03d}", r % 8, r % 8, f"GPU-{r // 8}-{r % 8}", None)
        for r in range(1200)
    ]
    html = render_html(Report("probe", [], placements))
    dom = Dom(html)
    nodes = dom.having("details", "node")
    assert len(nodes) == 150
    assert not [n for n in nodes if "open" in n]  # healthy nodes collapsed to one line
    assert len(dom.having("span", "rank")) == 1200
    assert len(html) < 2_000_000
    assert "ranks 0-7" in "".join(dom.text)


def test_compress_ranks() -> None:
    assert compress_ranks([5, 0, 1, 2, 9, 10]) == "0-2,5,9-10"
    assert compress_ranks([]) == ""


def test_write_html_to_a_file_and_bad_path(tmp_path: Path, machine: Load) -> None:
    path = tmp_path / "map.html"
    write_html(_report(machine("workstation-4gpu")), str(path))
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    with pytest.raises(InputError):
        write_html(Report("check"), str(tmp_path / "missing-dir" / "x.html"))


def test_empty_report_renders() -> None:
    dom = Dom(render_html(Report("explain")))
    assert "No findings." in "".join(dom.text)
    assert dom.having("details", "node") == []


@pytest.mark.slow
def test_64_node_report_renders_in_headless_chromium(sub_env: dict[str, str]) -> None:
    if not any(shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")):
        pytest.skip("no chromium installed (apt-get install -y chromium)")
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "html_render_check.py")],
        env=sub_env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "64 nodes, 512 GPUs, 512 ranks, 1 collision, 1 out-of-range" in done.stdout


def test_predicted_errors_and_nodeless_ranks_on_one_machine(machine: Load) -> None:
    ws = machine("workstation-4gpu")
    g = ws.gpus[1]
    report = Report(
        "check",
        [],
        [Placement(0, 0, None, 1, 1, g.uuid, g.pci_bus_id)],
        {
            "inventory": {"hosts": [ws.to_dict()]},
            "predicted_errors": [
                "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 4f000"
            ],
        },
    )
    nodes, _ = build_grid(report)
    assert [n.name for n in nodes] == ["ws-01"] and nodes[0].gpus[1].ranks[0].rank == 0
    dom = Dom(render_html(report))
    assert "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 4f000" in "".join(
        dom.text
    )


def test_gpus_known_only_by_bus_id_are_labelled_by_it() -> None:
    report = Report("explain", [], [Placement(0, None, "gpu-01", 0, None, None, "0000:4F:00.0")])
    nodes, _ = build_grid(report)
    assert nodes[0].gpus[0].label == "GPU 0000:4F:00.0"


def test_an_input_without_a_rank_map_says_so_instead_of_an_empty_grid(tmp_path: Path) -> None:
    from rankmap.adapters.local import explain_files
    from rankmap.render.html import render_html

    log = tmp_path / "o.log"
    log.write_text("[rank5]: RuntimeError: CUDA error: invalid device ordinal\n")
    page = render_html(explain_files([log]))
    assert 'id="no-map"' in page and 'id="nodes"' not in page
