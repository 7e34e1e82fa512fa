"""The input port: how the core gets the bytes of a file the user named, and the caps on them.

The core never opens a file. A command receives a :class:`Files` from ``cli/`` (the real one is
:class:`rankmap.adapters.files.LocalFiles`; a test may pass its own) and asks it for a path's
bytes or text by *kind*; the kind decides the size cap (:data:`LIMITS`) and the words of the
error. What the adapter guarantees: regular files only (a FIFO, device, directory or socket is a
one-line :class:`~rankmap.errors.InputError`, never a blocked ``open()``), at most the cap read,
UTF-16 with a BOM decoded, NUL bytes refused as binary.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

MiB = 2**20


@dataclass(frozen=True)
class Limit:
    """The cap for one kind of input and what such a file is called in an error."""

    max_bytes: int
    noun: str

    def human(self) -> str:
        return f"{self.max_bytes // MiB} MiB"


LIMITS: dict[str, Limit] = {
    "machine": Limit(64 * MiB, "a machine description"),
    "topo": Limit(4 * MiB, "`nvidia-smi topo -m` output"),
    "config": Limit(4 * MiB, "a launch script, config or hostfile"),
    "script": Limit(16 * MiB, "a training script"),
    "module": Limit(1 * MiB, "a module a training script imports"),
}


class Files(Protocol):
    """What the core may ask of the file system (relative paths are the caller's business)."""

    def read_bytes(self, path: Path, *, kind: str, what: str) -> bytes:
        """At most ``LIMITS[kind]`` bytes of a regular file (UTF-16 re-encoded as UTF-8).

        ``what`` names the input in errors (``"--machine 'x.xml'"``). Raises ``InputError``.
        """
        ...

    def read_text(self, path: Path, *, kind: str, what: str) -> str:
        """:meth:`read_bytes`, refusing NUL bytes and decoding strict UTF-8."""
        ...

    def is_file(self, path: Path) -> bool:
        """True when ``path`` names a regular file (after symlinks)."""
        ...

    def exists(self, path: Path) -> bool:
        """True when something (of any type) is at ``path``."""
        ...


class NoFiles:
    """A :class:`Files` for library calls given none: every read is a one-line InputError."""

    def read_bytes(self, path: Path, *, kind: str, what: str) -> bytes:
        from rankmap.errors import InputError

        raise InputError(f"{what}: cannot read: no file access given (pass files=LocalFiles())")

    def read_text(self, path: Path, *, kind: str, what: str) -> str:
        return self.read_bytes(path, kind=kind, what=what).decode("utf-8")

    def is_file(self, path: Path) -> bool:
        return False

    def exists(self, path: Path) -> bool:
        return False
