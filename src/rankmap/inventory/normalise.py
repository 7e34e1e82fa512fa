"""A pasted ``nvidia-smi`` output as clean lines, before any reader looks at it.

What people paste is rarely the bytes nvidia-smi wrote. This module undoes, in order:

* terminal and file artefacts: BOM, CRLF, ANSI colour codes, no-break and zero-width spaces;
* chat and markdown renderings: code fences (three or more backticks or tildes), inline
  backticks, ``**bold**``, blockquote markers (``> ``, nested), box-drawing characters
  (``│ ─ ═ ┼``) and dashes turned typographic (em/en dash, ellipsis);
* a table flattened onto one line (newlines became spaces): split again at its borders;
* log prefixes on every line: timestamps (ISO, syslog, ``[...]``), Ray/SkyPilot
  ``(head, rank=0, pid=...)`` / ``(task, pid=...)``, ``srun -l`` task labels ``0: ``,
  docker-compose ``service  | `` and kubectl ``[pod/...]`` prefixes. The prefix is kept beside
  the line (``PasteLine.prefix``) because it can say which task or machine printed it.

Readers then match the nvidia-smi content itself; none depends on the first line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 16 * 1024  # nvidia-smi lines are ~100 characters (a 200-field query CSV ~8k)
MAX_FLAT_LINE = 256 * 1024  # a flattened table: split at borders, then each chunk is capped
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b\][^\x07\x1b]{0,256}\x07")
_INVISIBLE = dict.fromkeys(map(ord, "\ufeff\u200b\u200c\u200d\u2060"), None)
_CHAR_MAP = str.maketrans(
    {
        "\u00a0": " ",
        "\u2007": " ",
        "\u202f": " ",
        "\t": "    ",
        "\u2502": "|",
        "\u2503": "|",
        "\u2551": "|",
        "\uff5c": "|",
        "\u2500": "-",
        "\u2501": "-",
        "\u2014": "--",
        "\u2013": "-",
        "\u2012": "-",
        "\u2212": "-",
        "\u2550": "=",
        "\u253c": "+",
        "\u254b": "+",
        "\u256a": "+",
        "\u256b": "+",
        "\u256c": "+",
        "\u250c": "+",
        "\u2510": "+",
        "\u2514": "+",
        "\u2518": "+",
        "\u251c": "+",
        "\u2524": "+",
        "\u252c": "+",
        "\u2534": "+",
        "\u2026": "...",
        "`": "",
    }
)
_FENCE = re.compile(r"^\s*(?:`{3,}|~{3,})[\w+-]*\s*$")
_QUOTE = re.compile(r"^(?:[ \t]*>)+[ \t]?")
_BORDER = re.compile(r"\+[-=+]{6,}\+|\|[-=]{6,}[-=+|]*\|")
_PREFIXES = (
    # 2024-05-01T10:00:00.123Z / [2024-05-01 10:00:00,123] / 10:00:00.123
    re.compile(
        r"^\[?\d{4}[-/]\d\d[-/]\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?(?![,\d])"
        r"(?:\s+(?:INFO|DEBUG|WARN(?:ING)?|ERROR|stdout|stderr|[FP]))?\s*[|:-]?\s?"
    ),
    re.compile(r"^\[?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?\]?(?![,\d])\s*[|:-]?\s?"),
    # syslog: "May  1 10:00:00 node1 prog[123]: "
    re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w./-]+(?:\[\d+\])?: "),
    # Ray / SkyPilot: "(head, rank=0, pid=123)", "(task, pid=7059)", "(pid=123, ip=10.0.0.1)"
    re.compile(r"^\((?:[\w.:-]{1,64},? )?(?:[\w.-]{1,32}=[\w.:/-]{1,64}(?:, ?| |(?=\)))){1,6}\) ?"),
    # kubectl logs --prefix: "[pod/trainer-0/main] "
    re.compile(r"^\[(?:pod/)?[\w.-]+/[\w.-]+\] "),
    # srun -l / mpirun --tag-output: "0: ", "[1,0]<stdout>: "
    re.compile(r"^\s{0,3}\d{1,5}: "),
    re.compile(r"^\[\d+,\d+\]<std(?:out|err)>: ?"),
    # docker-compose: "test_1  | "
    re.compile(r"^[\w.-]+\s+\| (?=\S|\s*$)"),
)


@dataclass(frozen=True)
class PasteLine:
    """One line as nvidia-smi printed it, and the log prefix that preceded it (if any)."""

    text: str
    prefix: str = ""


def paste_lines(text: str) -> list[PasteLine]:
    """The normalised lines of a paste (see the module docstring for what is undone)."""
    text = _ANSI.sub("", text.translate(_INVISIBLE))
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    out: list[PasteLine] = []
    for raw in text.split("\n"):
        if len(raw) > MAX_FLAT_LINE or _FENCE.match(raw):
            continue
        line = _QUOTE.sub("", raw.translate(_CHAR_MAP)).replace("**", "").rstrip()
        prefix, line = _strip_prefixes(line)
        for chunk in _unflatten(line):
            if len(chunk) <= MAX_LINE:
                out.append(PasteLine(chunk, prefix))
    return out


_ANY_PREFIX = re.compile("|".join(f"(?:{p.pattern})" for p in _PREFIXES))


def _strip_prefixes(line: str) -> tuple[str, str]:
    """``(prefix, rest)``: up to three stacked log prefixes removed from the line's start."""
    prefix = ""
    for _ in range(3):
        match = _ANY_PREFIX.match(line)
        if not match or match.end() == 0:
            break
        prefix += match.group(0)
        line = _QUOTE.sub("", line[match.end() :])
    return prefix.strip(), line


def _unflatten(line: str) -> list[str]:
    """A table flattened onto one line, cut again at its borders (other lines unchanged)."""
    if len(line) < 200 or len(_BORDER.findall(line, 0, MAX_FLAT_LINE)) < 2:
        return [line]
    chunks: list[str] = []
    pos = 0
    for match in _BORDER.finditer(line):
        chunks.append(line[pos : match.start()])
        chunks.append(match.group(0))
        pos = match.end()
    chunks.append(line[pos:])
    return [c.strip() for c in chunks if c.strip()]


_HOST_WORD = r"[A-Za-z][\w-]*(?:\.[\w-]+)*"
_PROMPT_HOST = re.compile(rf"(?:^|[\s(\[])[\w.-]*@({_HOST_WORD})[:\s~]")
_REMOTE_CMD = re.compile(
    rf"\b(?:ssh(?:\s+-\w+)*\s+(?:[\w.-]+@)?({_HOST_WORD})"
    rf"|kubectl\s+exec\s+(?:-\S+\s+)*(?:pod/)?({_HOST_WORD})"
    rf"|docker\s+exec\s+(?:-\S+\s+)*({_HOST_WORD}))\b"
)
_RUNNERS = re.compile(r"\b(?:srun|sbatch|salloc|mpirun|mpiexec|pdsh|clush|ansible|parallel)\b")


def host_of_command(line: str) -> str | None:
    """The machine a pasted ``nvidia-smi`` command line ran on, where the line says it.

    ``user@node1:~$ nvidia-smi -L`` -> ``node1``; ``ssh node2 nvidia-smi`` -> ``node2``;
    ``kubectl exec -it pod-a -- nvidia-smi -L`` -> ``pod-a``. A login node's prompt in front of
    ``srun``/``mpirun`` names no GPU host (the command ran elsewhere): ``None``.
    """
    if "nvidia-smi" not in line:
        return None
    command = line[: line.index("nvidia-smi")]
    remote = _REMOTE_CMD.search(command)
    if remote:
        return next(g for g in remote.groups() if g)
    if _RUNNERS.search(command):
        return None
    prompt = _PROMPT_HOST.search(command)
    return prompt.group(1) if prompt else None


def host_of_prefix(prefix: str) -> str | None:
    """The machine a log prefix names: Ray's ``ip=10.0.0.2`` (task labels name no machine)."""
    match = re.search(r"\bip=([\w.:-]+)", prefix)
    return match.group(1) if match else None


def label_of_prefix(prefix: str) -> str:
    """What tells one task's lines from another's in an interleaved log ("" when nothing)."""
    match = re.match(r"^\s*(\d{1,5}):$", prefix) or re.match(r"^\[(\d+),\d+\]", prefix)
    if match:
        return f"task {match.group(1)}"
    host = host_of_prefix(prefix)
    return host or ""
