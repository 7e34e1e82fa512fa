"""The rank map as people read it: colliding ranks marked in the terminal, and an HTML map that
says what it simulated (command, environment, machines) and keeps long rank lists readable."""

from __future__ import annotations

import re
from pathlib import Path

from rankmap.adapters.local import check_launch
from rankmap.inventory import load_machine
from rankmap.render.html import render_html

SHAPES = Path(__file__).parents[1] / "data" / "check" / "shapes"


def test_terminal_marks_colliding_ranks_only(run_cli) -> None:  # type: ignore[no-untyped-def]
    bad = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--",
            "torchrun",
            "--nproc-per-node",
            "4",
            str(SHAPES / "none_nccl" / "train.py"),
        ],
        width=160,
    )
    rows = [line for line in bad.stdout.splitlines() if re.match(r"^[0-3] ", line)]
    assert len(rows) == 4 and all("COLLIDES with ranks" in r for r in rows)
    assert "COLLIDES with ranks 1-3" in rows[0]
    good = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--",
            "torchrun",
            "--nproc-per-node",
            "4",
            str(SHAPES / "gpt_config" / "train.py"),
        ],
        width=160,
    )
    assert good.status == 0 and "COLLIDES" not in good.stdout


def test_html_shows_command_env_and_machine() -> None:
    report = check_launch(
        ["torchrun", "--nproc-per-node", "8", str(SHAPES / "gpt_config" / "train.py")],
        machines=load_machine("dgx-h100"),
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3", "HF_TOKEN": "hf_abcdefghijkl"},
        cwd=SHAPES,
    )
    page = render_html(report)
    sim = page[page.index('id="simulated"') :].split("</div></div>", 1)[0]
    assert "torchrun --nproc-per-node 8" in sim
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in sim
    assert "hf_abcdefghijkl" not in page  # secrets stay out
    assert "dgx-h100-01: 8 ×" in sim


def test_html_cuts_long_rank_lists_and_keeps_them_in_the_title() -> None:
    report = check_launch(
        [
            "torchrun",
            "--nnodes",
            "64",
            "--nproc-per-node",
            "8",
            str(SHAPES / "none_nccl" / "train.py"),
        ],
        machines=load_machine("dgx-h100"),
        env={},
        nodes=64,
        cwd=SHAPES,
    )
    from rankmap.findings import Report
    from rankmap.model import Placement

    odd = Report(command="check")
    odd.placements = [
        Placement(rank=r, local_rank=0, node="n1", cuda_index=0, nvml_index=0)
        for r in range(0, 400, 2)
    ]
    page = render_html(odd)
    summary = re.search(r"<summary>(.*?)</summary>", page)
    assert summary is not None and "…" in summary.group(1)
    assert 'title="0,2,4,' in summary.group(1)
    assert "overflow-wrap:anywhere" in page
    assert len(render_html(report)) > 0
