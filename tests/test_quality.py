"""The tree stays formatted, lint-clean and type-clean (ruff, mypy strict), and the README's
set-up commands are the ones CI runs."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, check=False)


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_ruff_format_and_lint() -> None:
    fmt = _run("ruff", "format", "--check", ".")
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = _run("ruff", "check", ".")
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_mypy_strict() -> None:
    pytest.importorskip("mypy")
    done = _run(sys.executable, "-m", "mypy")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_readme_setup_commands_match_ci() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    top = readme[:2500]
    commands = re.findall(r"^python -m pip install .*$", top, flags=re.M)
    assert len(commands) == 2, commands
    main_cmd, test_cmd = commands
    assert "rankmap " in main_cmd and "--machine" in main_cmd
    assert "pytest" in test_cmd
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert test_cmd in ci


def test_ci_fails_when_torch_cannot_be_installed(tmp_path: Path) -> None:
    # A stand-in `python` on PATH: `pip install ... torch==...` fails, anything else is logged.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    fake = bin_dir / "python"
    fake.write_text(
        f'#!/bin/sh\necho "$*" >> {log}\ncase "$*" in *torch==*) exit 1 ;; esac\nexit 0\n'
    )
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and "torch==2.13.0" in calls[0]  # pytest never ran
