"""Defects QA reported in explain: bad --launch, unreadable input, TTY hint, library redaction."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.errors import InputError, UsageError

DUP = "Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000\n"


def test_unsplittable_launch_is_a_usage_error(tmp_path: Path) -> None:
    log = tmp_path / "d.log"
    log.write_text(DUP)
    with pytest.raises(UsageError, match="^--launch: "):
        explain_files([log], launch="'unbalanced")


@pytest.mark.parametrize(
    "launch", ["torchrun --nproc-per-node 0 t.py", "accelerate launch --num_processes 0 t.py"]
)
def test_impossible_launch_is_said_not_ignored(tmp_path: Path, launch: str) -> None:
    log = tmp_path / "d.log"
    log.write_text(DUP)
    report = explain_files([log], launch=launch)
    assert "--launch could not be simulated" in repr(report.to_dict())
    assert report.findings[0].ranks == (0, 4)  # the log is still explained


def test_unsimulated_launcher_stays_best_effort(tmp_path: Path) -> None:
    log = tmp_path / "d.log"
    log.write_text(DUP)
    report = explain_files([log], launch="./run_all.sh --gpus 8")
    assert report.findings[0].ranks == (0, 4)


def test_read_error_names_the_file() -> None:
    with pytest.raises(InputError, match="/proc/self/mem: cannot read"):
        explain_files([Path("/proc/self/mem")])


def test_library_callers_get_redacted_evidence(tmp_path: Path) -> None:
    log = tmp_path / "d.log"
    log.write_text("HF_TOKEN=hf_supersecret123 torchrun train.py\n" + DUP)
    report = explain_files([log])
    text = repr(report.to_dict())
    assert "hf_supersecret123" not in text


def test_tty_stdin_gets_a_hint(run_cli) -> None:  # type: ignore[no-untyped-def]
    import io

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    result = run_cli(["explain"], stdin="")
    assert "reading the log from stdin" not in result.stderr
    from rankmap.cli import main
    from rankmap.cli.context import AppContext

    out, err = io.StringIO(), io.StringIO()
    ctx = AppContext(stdout=out, stderr=err, stdin=Tty(DUP), environ={}, width=100)
    assert main(["explain"], ctx) == 1
    assert "reading the log from stdin" in err.getvalue()
