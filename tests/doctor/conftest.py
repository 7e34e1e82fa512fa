"""Doctor fixtures (helpers live in doctor_fakes.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from doctor_fakes import FakeGpu, FakeNvml, two_gpus

from rankmap.adapters import nvml


@pytest.fixture
def fake_nvml(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., FakeNvml]]:
    """``fake_nvml(gpus, **kw)`` installs a scripted NVML; NVML state is reset around it."""
    nvml.reset()

    def _install(gpus: list[FakeGpu] | None = None, **kw: Any) -> FakeNvml:
        fake = FakeNvml(two_gpus() if gpus is None else gpus, **kw)
        fake.install(monkeypatch)
        return fake

    yield _install
    nvml.reset()
