"""Versions without importing torch, and the driver <-> torch CUDA verdict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rankmap
from rankmap.adapters.versions import (
    Versions,
    collect_python_versions,
    compatibility,
    torch_cuda_build,
)
from rankmap.findings import Severity


@pytest.mark.parametrize(
    ("source", "cuda"),
    [
        ("__version__ = '2.5.1+cu124'\ncuda: Optional[str] = '12.4'\n", "12.4"),
        ("__version__ = '2.0.1'\ncuda = '11.8'\n", "11.8"),
        ("cuda: Optional[str] = None\n", None),
        ("garbage", None),
    ],
)
def test_torch_cuda_build_is_read_as_text(tmp_path: Path, source: str, cuda: str | None) -> None:
    (tmp_path / "version.py").write_text(source, encoding="utf-8")
    assert torch_cuda_build(tmp_path) == cuda


def test_missing_version_file(tmp_path: Path) -> None:
    assert torch_cuda_build(tmp_path) is None


def test_collect_never_imports_torch() -> None:
    src = Path(rankmap.__file__).parents[1]
    code = (
        "import sys; from rankmap.adapters.versions import collect_python_versions as c; "
        "v = c(); print(v.torch_version); assert 'torch' not in sys.modules, 'torch imported'"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert out.returncode == 0, out.stderr


def test_collect_reports_python_version() -> None:
    assert collect_python_versions().python_version == ".".join(map(str, sys.version_info[:3]))


@pytest.mark.parametrize(
    ("driver", "build", "verdict", "severity"),
    [
        ("12.4", "12.4", "ok", None),
        ("12.4", "12.1", "ok", None),
        ("13.0", "12.8", "ok", None),
        ("12.2", "12.4", "too_old", Severity.WARNING),
        ("11.4", "12.1", "too_old", Severity.ERROR),
        (None, "12.4", "unknown", None),
        ("12.4", None, "unknown", None),
    ],
)
def test_compatibility_verdict(driver, build, verdict, severity) -> None:
    v = Versions(
        driver_version="x", cuda_driver_version=driver, torch_version="t", torch_cuda_version=build
    )
    got, findings = compatibility(v, hosts=("n1",))
    assert got == verdict
    if severity is None:
        assert findings == []
    else:
        assert [(f.code, f.severity) for f in findings] == [("RM050", severity)]
        assert findings[0].hosts == ("n1",)
