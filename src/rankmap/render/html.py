"""``render_html(report)``: one self-contained HTML rank map (inline CSS/JS, no network).

A grid of nodes x GPUs with the ranks on each GPU; collisions (several ranks on one physical
GPU) and unplaced / out-of-range ranks highlighted; host-identity groups marked; the findings
with their fixes. Every node is a ``<details>`` element: problem nodes open, healthy nodes
summarised in one line (readable for thousands of ranks). Every text is HTML-escaped, and a
Content-Security-Policy forbids any network access.
"""

from __future__ import annotations

import html
from collections.abc import Iterable

from rankmap.findings import Finding, Report
from rankmap.model import Placement
from rankmap.render.html_model import GpuSlot, NodeView, build_grid, compress_ranks

OPEN_ALL_UP_TO_NODES = 8  # smaller reports show every node expanded
MAX_TABLE_ROWS = 20000

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#1d1d1f;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .3em} h2{font-size:1.15em;margin:1.4em 0 .5em}
.verdict{display:inline-block;padding:.1em .6em;border-radius:4px;color:#fff;font-weight:600}
.v-ok{background:#2e7d32}.v-warning{background:#b26a00}.v-error{background:#c62828}
.stats span{margin-right:1.2em}.controls{margin:.8em 0}.controls input{margin-right:.6em}
details.node{background:#fff;border:1px solid #ddd;border-radius:6px;margin:.35em 0;padding:.3em .7em}
details.node.problem{border-color:#c62828;border-width:2px}
details.node>summary{cursor:pointer;font-weight:600}
.badge{font-size:.8em;padding:0 .45em;border-radius:3px;margin-left:.4em;font-weight:500}
.b-col{background:#ffcdd2;color:#8e0000}.b-oor{background:#ffe0b2;color:#7a3e00}
.b-id{background:#e1bee7;color:#4a148c}.b-ok{background:#c8e6c9;color:#1b5e20}
.b-warn{background:#fff3c4;color:#6d4c00}
.gpus{display:grid;grid-template-columns:repeat(auto-fill,minmax(150px,1fr));gap:.4em;margin:.5em 0}
.gpu{border:1px solid #bbb;border-radius:5px;padding:.3em .45em;background:#f5f9ff}
.gpu.idle{background:#f4f4f4;color:#777}.gpu.collision{background:#ffebee;border:2px solid #c62828}
.gpu.unplaced{background:#fff3e0;border:2px dashed #ef6c00}
.gpu .hd{font-weight:600}.gpu .sub{font-size:.78em;color:#555;word-break:break-all}
.rank{display:inline-block;margin:.12em .15em 0 0;padding:0 .35em;border-radius:3px;background:#1565c0;color:#fff;font-size:.85em}
.collision .rank{background:#c62828}.unplaced .rank{background:#ef6c00}
.finding{background:#fff;border-left:5px solid #999;padding:.4em .7em;margin:.4em 0}
.f-error{border-color:#c62828}.f-warning{border-color:#b26a00}.f-info{border-color:#0277bd}
.fix{background:#e8f5e9;padding:.15em .4em;border-radius:3px;font-family:ui-monospace,monospace}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:.1em .4em}
.hidden{display:none}
summary,.sub,.ranks{overflow-wrap:anywhere}
.sim{background:#fff;border:1px solid #ddd;border-radius:6px;padding:.4em .7em}
.sim code{white-space:pre-wrap;overflow-wrap:anywhere}
"""

_JS = """
(function(){
  var nodes=Array.prototype.slice.call(document.querySelectorAll('details.node'));
  var q=document.getElementById('q'),only=document.getElementById('only-problems');
  var shown=document.getElementById('shown');
  function apply(){
    var text=(q.value||'').toLowerCase(),n=0;
    nodes.forEach(function(d){
      var ok=(!only.checked||d.classList.contains('problem'))&&
        (!text||d.getAttribute('data-search').indexOf(text)>=0);
      d.classList.toggle('hidden',!ok); if(ok){n++;}
    });
    shown.textContent=String(n);
  }
  q.addEventListener('input',apply); only.addEventListener('change',apply);
  document.getElementById('expand').addEventListener('click',function(){
    nodes.forEach(function(d){d.open=true;});});
  document.getElementById('collapse').addEventListener('click',function(){
    nodes.forEach(function(d){d.open=false;});});
  apply(); document.body.setAttribute('data-ready','1');
})();
"""


def e(value: object) -> str:
    """HTML-escape any value (quotes included)."""
    return html.escape(str(value), quote=True)


def _rank_chip(p: Placement) -> str:
    tip = f"rank {p.rank}, local_rank {p.local_rank}, cuda:{p.cuda_index}"
    if p.mig:
        tip += f", MIG {p.mig.uuid}"
    if p.error:
        tip += f" — {p.error}"
    return f'<span class="rank" title="{e(tip)}">{e(p.rank)}</span>'


def _gpu_cell(slot: GpuSlot) -> str:
    cls = "gpu collision" if slot.collision else ("gpu" if slot.ranks else "gpu idle")
    sub = " · ".join(e(x) for x in (slot.pci_bus_id, slot.name) if x)
    note = (
        f'<div class="sub"><b>{len(slot.ranks)} ranks on one GPU</b></div>'
        if slot.collision
        else ""
    )
    chips = "".join(_rank_chip(p) for p in slot.ranks) or '<span class="sub">no rank</span>'
    return (
        f'<div class="{cls}" data-gpu="{e(slot.nvml_index)}"><div class="hd">{e(slot.label)}</div>'
        f'<div class="sub">{sub}</div>{note}<div>{chips}</div></div>'
    )


def _unplaced_cell(ranks: list[Placement]) -> str:
    reasons = sorted({p.error or "no GPU known" for p in ranks})
    chips = "".join(_rank_chip(p) for p in ranks)
    return (
        '<div class="gpu unplaced"><div class="hd">out of range / unknown</div>'
        f'<div class="sub">{"; ".join(e(r) for r in reasons[:4])}</div><div>{chips}</div></div>'
    )


def _node(node: NodeView, open_all: bool) -> str:
    badges = []
    if node.collisions:
        badges.append(f'<span class="badge b-col">{node.collisions} collision(s)</span>')
    if node.unplaced:
        badges.append(f'<span class="badge b-oor">{len(node.unplaced)} out of range</span>')
    if node.identity_group is not None:
        badges.append(f'<span class="badge b-id">identity group {node.identity_group}</span>')
    if node.finding_severity == "warning" and not node.problem:
        badges.append('<span class="badge b-warn">warning</span>')
    if not node.problem and node.finding_severity != "warning":
        badges.append('<span class="badge b-ok">ok</span>')
    ranks = compress_ranks(node.ranks) or "none"
    summary = f"{e(node.name)} — {len(node.gpus)} GPU(s), ranks {_short_ranks(ranks)}" + "".join(
        badges
    )
    search = f"{node.name} {ranks}".lower()
    cells = "".join(_gpu_cell(s) for s in node.gpus)
    if node.unplaced:
        cells += _unplaced_cell(node.unplaced)
    opened = " open" if (open_all or node.problem) else ""
    cls = "node problem" if node.problem else "node"
    return (
        f'<details class="{cls}" data-node="{e(node.name)}" data-search="{e(search)}"{opened}>'
        f'<summary>{summary}</summary><div class="gpus">{cells}</div></details>'
    )


def _finding(f: Finding) -> str:
    parts = [
        f'<div class="finding f-{e(f.severity.value)}" data-code="{e(f.code)}">'
        f"<b>{e(f.severity.value.upper())} {e(f.code)}</b> {e(f.title)} "
        f'<span class="sub">({e(f.category)})</span>'
    ]
    if f.detail:
        parts.append(f"<div>{e(f.detail)}</div>")
    facts = []
    if f.ranks:
        facts.append(f"ranks {e(compress_ranks(f.ranks))}")
    if f.hosts:
        facts.append("hosts " + e(", ".join(f.hosts[:20])))
    if f.devices:
        facts.append("devices " + e(", ".join(f.devices[:20])))
    if facts:
        parts.append(f'<div class="sub">{" · ".join(facts)}</div>')
    for line in f.evidence[:5]:
        parts.append(f'<div class="sub">&gt; {e(line)}</div>')
    if f.fix:
        parts.append(f'<div>fix: <span class="fix">{e(f.fix)}</span></div>')
    return "".join(parts) + "</div>"


def _table(placements: Iterable[Placement]) -> str:
    rows = sorted(placements, key=lambda p: p.rank)[:MAX_TABLE_ROWS]
    if not rows:
        return ""
    head = "".join(
        f"<th>{c}</th>"
        for c in ("rank", "local", "node", "cuda", "nvml", "pci_bus_id", "uuid", "note")
    )
    body = "".join(
        "<tr>"
        + "".join(
            f"<td>{e('-' if v is None else v)}</td>"
            for v in (
                p.rank,
                p.local_rank,
                p.node,
                p.cuda_index,
                p.nvml_index,
                p.pci_bus_id,
                p.mig.uuid if p.mig else p.uuid,
                p.error or "",
            )
        )
        + "</tr>"
        for p in rows
    )
    return (
        f"<details><summary>Rank table ({len(rows)} ranks)</summary>"
        f'<table id="placements"><tr>{head}</tr>{body}</table></details>'
    )


MAX_SUMMARY_RANKS = 160  # characters of a rank list in a node's one-line summary


def _short_ranks(text: str) -> str:
    """A long rank list cut for a summary line; the full list stays in the title attribute."""
    if len(text) <= MAX_SUMMARY_RANKS:
        return e(text)
    cut = text[:MAX_SUMMARY_RANKS].rsplit(",", 1)[0]
    return f'<span class="ranks" title="{e(text)}">{e(cut)}, …</span>'


def _simulated(report: Report) -> str:
    """What a simulation ran: the launch command, the environment and the machines."""
    launch = report.sections.get("launch")
    if not isinstance(launch, dict):
        return ""
    import shlex

    argv = [str(a) for a in launch.get("argv") or []]
    env = launch.get("env") or {}
    env_text = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in env.items()) or "(none given)"
    hosts = []
    inv = report.sections.get("inventory")
    for h in (inv.get("hosts") if isinstance(inv, dict) else None) or []:
        gpus = h.get("gpus") or []
        names = sorted({str(g.get("name")) for g in gpus if g.get("name")})
        hosts.append(f"{h.get('hostname')}: {len(gpus)} × {', '.join(names) or 'GPU'}")
    nodes = launch.get("nnodes")
    machine = "; ".join(hosts[:8]) + (f" (+{len(hosts) - 8} more)" if len(hosts) > 8 else "")
    sel = launch.get("device_selection")
    where = launch.get("device_selection_where") or launch.get("script") or ""
    return (
        '<h2>Simulated</h2><div class="sim" id="simulated">'
        f"<div>command: <code>{e(shlex.join(argv))}</code></div>"
        f"<div>environment: <code>{e(env_text)}</code></div>"
        f"<div>machine(s): {e(machine)}{f' — {e(nodes)} node(s)' if nodes else ''}</div>"
        f'<div>device selection: {e(sel)} <span class="sub">{e(where)}</span></div></div>'
    )


def render_html(report: Report) -> str:
    """The whole HTML document as a string."""
    nodes, groups = build_grid(report)
    open_all = len(nodes) <= OPEN_ALL_UP_TO_NODES
    n_ranks = len(report.placements)
    collisions = sum(n.collisions for n in nodes)
    unplaced = sum(len(n.unplaced) for n in nodes)
    title = f"rankmap {report.command}: {report.verdict}"
    group_lines = "".join(
        f"<li>identity group {i}: {e(', '.join(g))}</li>" for i, g in enumerate(groups, start=1)
    )
    findings = "".join(_finding(f) for f in report.ordered_findings()) or "<p>No findings.</p>"
    predicted = report.sections.get("predicted_errors")
    if isinstance(predicted, list) and predicted:
        lines = "".join(f"<li><code>{e(line)}</code></li>" for line in predicted[:20])
        findings += f'<h2>Errors the job would print</h2><ul id="predicted">{lines}</ul>'

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>"
        f'<h1>rankmap {e(report.command)} <span class="verdict v-{e(report.verdict)}">'
        f"{e(report.verdict.upper())}</span></h1>"
        f'<div class="stats" id="stats"><span>nodes <b id="n-nodes">{len(nodes)}</b></span>'
        f'<span>ranks <b id="n-ranks">{n_ranks}</b></span>'
        f'<span>collisions <b id="n-collisions">{collisions}</b></span>'
        f'<span>out of range <b id="n-unplaced">{unplaced}</b></span>'
        f'<span>findings <b id="n-findings">{len(report.findings)}</b></span></div>'
        + _simulated(report)
        + f'<h2>Findings</h2><div id="findings">{findings}</div>'
        + (f'<h2>Host identity groups</h2><ul id="groups">{group_lines}</ul>' if groups else "")
        + '<h2>Nodes × GPUs</h2><div class="controls">'
        '<input id="q" type="search" placeholder="filter: node or rank">'
        '<label><input id="only-problems" type="checkbox">only problems</label> '
        '<button id="expand" type="button">expand all</button> '
        '<button id="collapse" type="button">collapse all</button> '
        f'shown: <b id="shown">{len(nodes)}</b></div>'
        + (
            f'<div id="nodes">{"".join(_node(n, open_all) for n in nodes)}</div>'
            if nodes
            else '<p class="sub" id="no-map">The input holds no rank map (no NCCL Init lines or '
            "launch to place the ranks on GPUs): the findings above name the ranks it states.</p>"
        )
        + f"{_table(report.placements)}<script>{_JS}</script></body></html>\n"
    )
