"""Shared fixtures: in-process CLI runs with captured streams, and built-in machine profiles."""

from __future__ import annotations

import io
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from rankmap.cli import main
from rankmap.cli.context import AppContext
from rankmap.inventory import load_machine
from rankmap.model import Host

DATA = Path(__file__).parent / "data"


@dataclass
class CliResult:
    status: int
    stdout: str
    stderr: str


RunCli = Callable[..., CliResult]


@pytest.fixture
def run_cli(tmp_path: Path) -> RunCli:
    """Run ``rankmap`` in-process: ``run_cli(["doctor", "--json"], env={...}, stdin="...")``."""

    def _run(
        argv: list[str],
        *,
        env: Mapping[str, str] | None = None,
        stdin: str = "",
        width: int = 100,
        **ctx_kwargs: object,
    ) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        ctx = AppContext(
            stdout=out,
            stderr=err,
            stdin=io.StringIO(stdin),
            environ=dict(env or {}),
            color=False,
            width=width,
            cwd=tmp_path,
            **ctx_kwargs,
        )  # type: ignore[arg-type]
        status = main(argv, ctx)
        return CliResult(status, out.getvalue(), err.getvalue())

    return _run


@pytest.fixture
def machine() -> Callable[[str], Host]:
    """Load the single host of a built-in profile by name."""

    def _load(name: str) -> Host:
        hosts = load_machine(name)
        assert len(hosts) == 1
        return hosts[0]

    return _load
