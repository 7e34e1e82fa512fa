"""The one input adapter: every file and stream a command reads goes through here.

Regular files only: the type is checked with ``os.stat`` before ``open`` and again on the open
descriptor (opened ``O_NONBLOCK``, so a FIFO swapped in between cannot block), then at most the
kind's cap (:data:`rankmap.sources.LIMITS`) is read in bounded chunks: ``/dev/zero``, a FIFO, a
2 GB sparse file or a directory end in one line and exit 2, never a hang or gigabytes of memory.
"""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import IO, Any, BinaryIO, cast

from rankmap.errors import InputError
from rankmap.sources import LIMITS, Limit

READ_CHUNK = 1 * 2**20
_NOT_REGULAR = (
    (stat.S_ISDIR, "is a directory, not a file"),
    (stat.S_ISFIFO, "is a FIFO (named pipe), not a regular file: save it to a file first"),
    (stat.S_ISSOCK, "is a socket, not a regular file"),
    (stat.S_ISCHR, "is a device, not a regular file"),
    (stat.S_ISBLK, "is a block device, not a regular file"),
)


def refuse_not_regular(mode: int, what: str) -> None:
    """InputError naming the type when ``mode`` is not a regular file's."""
    for test, words in _NOT_REGULAR:
        if test(mode):
            raise InputError(f"{what} {words}")
    if not stat.S_ISREG(mode):
        raise InputError(f"{what} is not a regular file")


def _os_words(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def open_regular(path: Path | str, what: str) -> tuple[BinaryIO, int]:
    """An unbuffered binary handle on a regular file, and its size; InputError otherwise."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError(f"{what}: cannot read: no such file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the name
        words = _os_words(exc) if isinstance(exc, OSError) else "invalid file name"
        raise InputError(f"{what}: cannot read: {words}") from None
    refuse_not_regular(st.st_mode, what)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise InputError(f"{what}: cannot read: {_os_words(exc)}") from None
    try:
        st = os.fstat(fd)
        refuse_not_regular(st.st_mode, what)  # swapped for a FIFO between stat and open
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb", buffering=0), st.st_size


def read_capped(handle: IO[bytes], limit: int) -> bytes:
    """At most ``limit + 1`` bytes, read in chunks (never one ``read(limit)`` of a huge file)."""
    parts: list[bytes] = []
    left = limit + 1
    while left > 0:
        chunk = handle.read(min(READ_CHUNK, left))
        if not chunk:
            break
        parts.append(chunk)
        left -= len(chunk)
    return b"".join(parts)


def from_utf16(data: bytes) -> bytes:
    """UTF-8 bytes of ``data`` when it is UTF-16 with a BOM (``nvidia-smi > f`` in PowerShell)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            return data
    return data


def _limit(kind: str) -> Limit:
    return LIMITS[kind]


def _checked(data: bytes, limit: Limit, what: str) -> bytes:
    if len(data) > limit.max_bytes:
        raise InputError(f"{what} is larger than {limit.human()}: not {limit.noun}")
    return from_utf16(data)


def decode_text(data: bytes, what: str) -> str:
    """Strict UTF-8 text of ``data`` (a leading BOM dropped); InputError for binary/other."""
    if b"\x00" in data:
        raise InputError(f"{what} is a binary file")
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        raise InputError(f"{what} is not UTF-8 text") from None


class LocalFiles:
    """:class:`rankmap.sources.Files` on this machine's file system."""

    def read_bytes(self, path: Path, *, kind: str, what: str) -> bytes:
        limit = _limit(kind)
        handle, _ = open_regular(path, what)
        with handle:
            try:
                data = read_capped(handle, limit.max_bytes)
            except OSError as exc:
                raise InputError(f"{what}: cannot read: {_os_words(exc)}") from None
        return _checked(data, limit, what)

    def read_text(self, path: Path, *, kind: str, what: str) -> str:
        return decode_text(self.read_bytes(path, kind=kind, what=what), what)

    def is_file(self, path: Path) -> bool:
        try:
            return stat.S_ISREG(os.stat(path).st_mode)
        except (OSError, ValueError):
            return False

    def exists(self, path: Path) -> bool:
        try:
            os.stat(path)
        except (OSError, ValueError):
            return False
        return True


def binary_stream(stream: Any) -> BinaryIO:
    """The bytes of a text stream (``sys.stdin``: its buffer; ``StringIO``: encoded in chunks)."""
    raw = getattr(stream, "buffer", None)
    if raw is not None:
        return cast(BinaryIO, raw)
    if isinstance(stream, io.TextIOBase):
        return cast(BinaryIO, _TextAsBytes(stream))
    return cast(BinaryIO, stream)


class _TextAsBytes(io.RawIOBase):
    """A text stream (``StringIO``) read as UTF-8 bytes in chunks."""

    def __init__(self, text: Any) -> None:
        self._text = text

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        chunk: str = self._text.read(size if size and size > 0 else -1)
        return chunk.encode("utf-8", "replace")


class _Utf16AsUtf8(io.RawIOBase):
    """A UTF-16 (BOM) byte stream read as UTF-8 bytes, decoded incrementally in chunks."""

    def __init__(self, raw: BinaryIO, head: bytes) -> None:
        import codecs

        self._raw = raw
        self._head = head
        self._decoder = codecs.getincrementaldecoder("utf-16")("replace")
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self._done:
            return b""
        want = size if size and size > 0 else READ_CHUNK
        while True:
            data, self._head = self._head + self._raw.read(want), b""
            text = self._decoder.decode(data, final=not data)
            if not data:
                self._done = True
            if text or self._done:
                return text.encode("utf-8", "replace")


def utf8_stream(raw: BinaryIO) -> BinaryIO:
    """``raw`` itself, or a re-encoding view when it starts with a UTF-16 BOM."""
    head = raw.read(2) or b""
    if head in (b"\xff\xfe", b"\xfe\xff"):
        return cast(BinaryIO, _Utf16AsUtf8(raw, head))
    return put_back(raw, head)


def put_back(raw: BinaryIO, head: bytes) -> BinaryIO:
    """``raw`` read from the start again: ``head`` (bytes already read from it), then the rest."""
    return cast(BinaryIO, _Prefixed(raw, head))


class _Prefixed(io.RawIOBase):
    """``raw`` with ``head`` (bytes already read from it) put back in front."""

    def __init__(self, raw: BinaryIO, head: bytes) -> None:
        self._raw = raw
        self._head = head

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        head, self._head = self._head, b""
        if size is None or size < 0:
            return head + self._raw.read()
        if head and len(head) >= size:
            self._head = head[size:]
            return head[:size]
        return head + (self._raw.read(size - len(head)) or b"")


def read_stdin(stream: Any, *, kind: str, what: str) -> str:
    """Text of stdin for ``kind`` (bounded; UTF-16 with a BOM decoded as from a file)."""
    limit = _limit(kind)
    try:
        data = read_capped(binary_stream(stream), limit.max_bytes)
    except OSError as exc:
        raise InputError(f"{what}: cannot read stdin: {_os_words(exc)}") from None
    return decode_text(_checked(data, limit, what), what)
