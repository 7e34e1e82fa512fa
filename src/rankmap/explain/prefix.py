"""Line prefixes added by NCCL, launchers and loggers, peeled off into facts (host, pid, rank).

Handled (reference/nccl.md (d), launchers.md): ``host:pid:tid [dev]`` (NCCL), an optional
``[YYYY-MM-DD HH:MM:SS] `` timestamp (NCCL >= 2.26 WARN) and other ISO timestamps, ``[rankN]:``
(PyTorch), ``[1,N]<stdout>:`` (Open MPI ``--tag-output``; horovodrun's ``[N]<stdout>:``,
horovod/runner/common/util/safe_shell_exec.py), ``host: `` (pdsh / DeepSpeed),
``N: `` (``srun --label``), ``(pid=N)`` / ``(RayWorkerWrapper pid=N, ip=A)`` (Ray).
Text pasted with lost newlines is split back at known message starts (:func:`split_messages`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rankmap.numbers import saturating_int

_TIMESTAMP = re.compile(
    r"^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?:?\s+"
)
_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+\s+")
_RANK = re.compile(r"^\[rank(?P<rank>\d+)\]:\s?")
_TAG = re.compile(r"^\[[A-Za-z][\w|.-]*\]:\s?")  # torchx-style "[trainer0|0]:" role tags
# (horovodrun's own prefix has no job id: "[2]<stderr>:", review 68)
_MPI = re.compile(r"^\[(?:\d+,)?(?P<rank>\d+)\]<(?:stdout|stderr)>:\s?")
_RAY = re.compile(r"^\((?:[\w.-]+ )?pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\w.:-]+))?\)\s*")
_SRUN = re.compile(r"^(?P<task>\d{1,5}): ")
# a host name as pdsh / DeepSpeed prefix it (with a digit or a dash: "node-2", "gpu01"), or an IP
PDSH_HOST = r"(?:localhost|[A-Za-z][\w.-]*[\d-][\w.-]*|\d+\.\d+\.\d+\.\d+)"
# (any name where NCCL's own prefix repeats it: "nodeA: nodeA:31202:31270 [0] NCCL INFO ...",
# review 68)
_PDSH = re.compile(
    rf"^(?P<host>{PDSH_HOST}): (?=\S)|^(?P<named>[A-Za-z][\w.-]*): (?=(?P=named):\d+:\d+ \[)"
)
NCCL_PREFIX = re.compile(
    r"^(?P<host>[\w.-]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] ?(?:(?P<ms>\d+\.\d+) )?"
)
# Message starts used to split text whose newlines were lost (pasted into an issue).
_SPLIT = re.compile(
    r"(?<=Last error:)\s*|(?<=\S)\s+(?="
    r"(?:\[\d{4}-\d\d-\d\d [\d:]+\] )?[\w.-]+:\d+:\d+ \[\d+\] (?:[\w./]+:\d+ )?NCCL (?:INFO|WARN)"
    r"|\[rank\d+\]:|\[\d+,\d+\]<std(?:out|err)>:|Traceback \(most recent"
    r"|(?:[\w.]+\.)?(?:DistBackendError|RuntimeError|ValueError|AcceleratorError|"
    r"OutOfMemoryError|XlaRuntimeError|ChildFailedError)[:\s]"
    r"|nccl(?:InvalidUsage|InternalError|UnhandledCudaError|SystemError|RemoteError|"
    r"InvalidArgument): |Last error:|Root Cause \(|Failures:"
    r"|\s{2,}(?:time|host|rank|exitcode|error_file|traceback)\s+:)"
)


@dataclass(frozen=True)
class Prefix:
    """What the prefixes of one line said about where it came from."""

    host: str | None = None
    pid: int | None = None
    tid: int | None = None
    dev: int | None = None  # the logging thread's current CUDA device (NCCL prefix)
    rank: int | None = None  # from [rankN]: or mpirun [1,N]
    task: int | None = None  # srun --label task id
    ip: str | None = None  # Ray worker ip
    nccl: bool = False  # the line had NCCL's host:pid:tid [dev] prefix
    ray: bool = False  # the line came from a Ray worker ((pid=N) prefix)


def strip_prefixes(text: str) -> tuple[Prefix, str]:
    """Peel launcher/logger prefixes off ``text``; return the facts and the message."""
    try:
        return _strip_prefixes(text)
    except ValueError:  # NOTE(issue 11): a number of over 4,300 digits is no prefix of a log
        return Prefix(), text.strip()


def _strip_prefixes(text: str) -> tuple[Prefix, str]:
    host = ip = None
    pid = tid = dev = rank = task = None
    nccl = ray = False
    msg = text.strip()
    for _ in range(6):
        m = _TIMESTAMP.match(msg) or _GLOG.match(msg)
        if m:
            msg = msg[m.end() :]
            continue
        m = _RANK.match(msg) or _MPI.match(msg)
        if m:
            rank = saturating_int(m.group("rank"))
            msg = msg[m.end() :]
            continue
        m = _TAG.match(msg)
        if m:
            msg = msg[m.end() :]
            continue
        m = _RAY.match(msg)
        if m:
            pid = saturating_int(m.group("pid"))
            ip = m.group("ip") or ip
            ray = True
            msg = msg[m.end() :]
            continue
        m = NCCL_PREFIX.match(msg)
        if m:
            host, pid, tid = (
                m.group("host"),
                saturating_int(m.group("pid")),
                saturating_int(m.group("tid")),
            )
            dev = saturating_int(m.group("dev"))
            nccl = True
            msg = msg[m.end() :]
            break
        m = _SRUN.match(msg)
        if m:
            task = saturating_int(m.group("task"))
            msg = msg[m.end() :]
            continue
        m = _PDSH.match(msg)
        if m and not msg.startswith(("http", "https")):
            host = m.group("host") or m.group("named")
            msg = msg[m.end() :]
            continue
        break
    return Prefix(host, pid, tid, dev, rank, task, ip, nccl, ray), msg


# What a split point of _SPLIT needs after it: one of these literals, a run of two whitespace
# characters, or an NCCL message start other than the line's own (the gate of _may_split).
_SPLIT_WORDS = (
    "Last error:",
    "[rank",
    "]<std",
    "Traceback (most recent",
    "Error",
    "ncclInvalid",
    "Root Cause (",
    "Failures:",
)
_TWO_SPACES = re.compile(r"\s\s")
_NCCL_MESSAGES = ("NCCL INFO", "NCCL WARN")
_OWN_NCCL_PREFIX = re.compile(r"[\w.-]+:\d+:\d+ \[\d+\] (?:[\w./]+:\d+ )?")


def _may_split(text: str) -> bool:
    """False where :data:`_SPLIT` cannot split ``text`` (a gate: the regex costs ~25 us on a
    200-character NCCL line, and a big log's candidate lines are mostly Init lines). The only
    NCCL message of a line that starts with its own prefix (``host:pid:tid [dev] NCCL INFO``)
    is no split point: no whitespace before that prefix."""
    if any(word in text for word in _SPLIT_WORDS) or _TWO_SPACES.search(text):
        return True
    at = [i for i in (text.find(m) for m in _NCCL_MESSAGES) if i != -1]
    if not at:
        return False
    if len(at) > 1 or any(text.count(m) > 1 for m in _NCCL_MESSAGES):
        return True
    return _OWN_NCCL_PREFIX.fullmatch(text, 0, at[0]) is None


def split_messages(text: str) -> list[str]:
    """Split a line holding several messages (lost newlines) at known message starts."""
    if len(text) < 120:
        return [text]
    if not _may_split(text):  # one message (or prefixes only: strip_prefixes sees the same)
        return [text]
    parts = [p for p in _SPLIT.split(text) if p and p.strip()]
    # A part that is only prefixes ("0: [rank3]:") belongs to the message after it.
    out: list[str] = []
    carry = ""
    for part in parts:
        if strip_prefixes(part.rstrip() + " \x00")[1] == "\x00":
            carry += part + " "
            continue
        out.append(carry + part)
        carry = ""
    if carry:
        out.append(carry.rstrip())
    return out or [text]
