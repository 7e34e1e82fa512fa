"""Library entry points wired to this machine's files and stdin (the CLI wires the same ports).

``rankmap.check.engine.check_launch`` and ``rankmap.explain.engine.explain_files`` are pure: they
read through the ports they are given. These wrappers give them the local ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.logs import LocalLogs
from rankmap.findings import Report
from rankmap.model import Host


def check_launch(argv: Sequence[str], **kwargs: Any) -> Report:
    """:func:`rankmap.check.engine.check_launch` reading config files and scripts from disk."""
    from rankmap.check.engine import check_launch as engine

    kwargs.setdefault("files", LocalFiles())
    return engine(argv, **kwargs)


def explain_files(paths: Sequence[Path | str], *, stdin: Any = None, **kwargs: Any) -> Report:
    """:func:`rankmap.explain.engine.explain_files` reading logs (``-`` = ``stdin``) from disk."""
    from rankmap.explain.engine import explain_files as engine

    kwargs.setdefault("files", LocalFiles())
    return engine(paths, logs=LocalLogs(stdin), **kwargs)


def load_machine(spec: str) -> list[Host]:
    """:func:`rankmap.inventory.load_machine` reading machine files from disk."""
    from rankmap.inventory import load_machine as engine

    return engine(spec, LocalFiles())
