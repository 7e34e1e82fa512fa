"""Run ``check`` on a script written for a test (a shape written here, never a real project's)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import check_launch
from rankmap.findings import Report
from rankmap.inventory import load_machine


def check_script(
    tmp_path: Path,
    source: str,
    launch: Sequence[str],
    *,
    nodes: int = 1,
    env: Mapping[str, str] | None = None,
) -> Report:
    """``check`` of ``launch`` + ``tmp_path/train.py`` holding ``source``, on dgx-h100 nodes."""
    script = tmp_path / "train.py"
    script.write_text(source)
    return check_launch(
        [*launch, str(script)],
        machines=load_machine("dgx-h100"),
        env=dict(env or {}),
        nodes=nodes,
        cwd=tmp_path,
        files=LocalFiles(),
    )
