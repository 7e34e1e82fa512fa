"""The layering of docs/architecture.md holds: import-linter's contracts (pyproject.toml) are kept,
a planted breach is caught, and the package has no import circles (lazy imports count)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

pytest.importorskip("importlinter")
grimp = pytest.importorskip("grimp")

_LINT = (
    "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True))"
)


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [sys.executable, "-c", _LINT],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_contracts_kept() -> None:
    done = _lint(ROOT)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "planted"),
    [
        ("check/engine.py", "import rankmap.adapters.nvml"),
        ("explain/engine.py", "import subprocess"),
        ("findings.py", "import rankmap.cli"),
        ("probe/collate.py", "import torch"),
        ("bench/sizes.py", "import socket"),
        ("doctor/engine.py", "import rankmap.adapters.versions"),
        ("explain/reader.py", "import multiprocessing"),
        ("cli/check.py", "import rich.table"),
    ],
)
def test_planted_breach_is_caught(tmp_path: Path, module: str, planted: str) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(SRC / "rankmap", tmp_path / "src" / "rankmap")
    target = tmp_path / "src" / "rankmap" / module
    target.write_text(
        target.read_text(encoding="utf-8") + f"\n\ndef _planted() -> None:\n    {planted}\n",
        encoding="utf-8",
    )
    done = _lint(tmp_path)
    assert done.returncode != 0, done.stdout
    assert "BROKEN" in done.stdout
    assert module.removesuffix(".py").replace("/", ".") in done.stdout


def _circles(package: str) -> list[set[str]]:
    graph = grimp.build_graph(package, exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(comp)

    for m in modules:
        if m not in index:
            visit(m)
    return found


def test_no_import_circles() -> None:
    assert _circles("rankmap") == []


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
@pytest.mark.parametrize(
    ("module", "planted", "allowed"),
    [
        ("check/engine.py", "import os\n    return os.environ", False),
        ("probe/collate.py", "import os\n    return os.getenv('X')", False),
        ("explain/engine.py", "import sys\n    return sys.stdin", False),
        ("adapters/job.py", "import os\n    return os.environ", True),
        ("cli/check.py", "import sys\n    return sys.stdin", True),
    ],
)
def test_core_cannot_read_the_environment_or_stdin(
    tmp_path: Path, module: str, planted: str, allowed: bool
) -> None:
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "src" / "rankmap" / module
    target.parent.mkdir(parents=True)
    target.write_text(f"def _planted() -> object:\n    {planted}\n", encoding="utf-8")
    done = subprocess.run(
        ["ruff", "check", "--no-cache", "--select", "TID251", str(target)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode == 0) is allowed, done.stdout
    assert ("TID251" in done.stdout) is not allowed
