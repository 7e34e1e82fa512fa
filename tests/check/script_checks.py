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


ONE_GPU_PER_RANK = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def check_argv(
    tmp_path: Path,
    argv: Sequence[str],
    *,
    nodes: int | None = 1,
    shell_file: Path | None = None,
    script: str | None = ONE_GPU_PER_RANK,
) -> Report:
    """``check`` of ``argv`` (or the launch script ``shell_file``) run from ``tmp_path``, where
    ``train.py`` holds ``script`` (None: as the test wrote it), on dgx-h100 nodes."""
    if script is not None:
        (tmp_path / "train.py").write_text(script)
    return check_launch(
        list(argv),
        machines=load_machine("dgx-h100"),
        env={},
        nodes=nodes,
        shell_file=shell_file,
        cwd=tmp_path,
        files=LocalFiles(),
    )


def fixes_of(report: Report, code: str) -> list[str]:
    """The fix texts of ``report``'s findings with ``code``."""
    return [f.fix or "" for f in report.ordered_findings() if f.code == code]
