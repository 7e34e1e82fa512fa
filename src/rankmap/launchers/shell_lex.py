"""Shell script text to commands: lines joined at backslashes and inside quoted strings, cut at
``;``, ``&&``, ``|`` and ``&``, with comments, ``$(seq)`` / C-style loop headers and command
outputs marked for the reader (:mod:`rankmap.launchers.shell`). Nothing is executed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from rankmap.errors import InputError

ARITH = re.compile(r"\$\(\((.*?)\)\)")
# `$(seq A [B [C]])` whose operands are numbers, variables or (already marked) arithmetic
_SEQ = re.compile(r"\$\(\s*seq\s+([^\s()]+)(?:\s+([^\s()]+))?(?:\s+([^\s()]+))?\s*\)")
# `for ((i=0; i<8; i++))`; a bound may be a variable (`i<NGPU`, `i<$NGPU`), read by the reader
_CFOR = re.compile(
    r"for\s*\(\(\s*(\w+)\s*=\s*(\d+)\s*;\s*\w+\s*(<=?)\s*\$?\{?(\w+)\}?\s*;[^)]*\)\)"
)
# NOTE: a longer line (after joining ``\\`` continuations) is data - a heredoc body, base64 - not
# a launch line; shlex reads one character at a time and is quadratic in a token's length, so
# such lines are skipped instead of tokenised (a 20 MB line would otherwise take hours).
MAX_LINE = 16 * 1024


# bash's ANSI-C string $'don\'t': one word whose value rankmap does not need
_ANSI_C = re.compile(r"\$'(?:[^'\\]|\\.)*'")
# a parameter expansion with a space inside (`${GPUS//,/ }`): a value computed when the script
# runs, one word (shlex would cut it at the space)
_SPACED_PARAM = re.compile(r"\$\{[^}\s]*\s[^}]*\}")
# (one already marked inside another, `$(cd "$(dirname "$0")" && pwd)`, is part of it)
_COMMAND_OUTPUT = re.compile(r"`[^`\n]*`|\$\((?!\()(?:[^()\n]|\$\(…\))*\)")
MAX_NESTED_OUTPUTS = 4  # command outputs nested this deep are marked
_HOSTNAME_OUTPUT = re.compile(
    r"\$\(\s*hostname(?:\s+-[sfiI])?\s*\)|`hostname(?:\s+-[sfiI])?`|\$\{?HOSTNAME\b\}?"
)
TASK_HOST = "${RANKMAP_TASK_HOST}"  # the name a task's own shell gives its host


def _task_hostnames(line: str) -> str:
    """``line`` with the host's name inside single quotes marked :data:`TASK_HOST`: a
    ``bash -c '…'`` body that srun runs on every node expands it there, once per node."""
    if "'" not in line or "host" not in line.lower():
        return line
    out: list[str] = []
    i, quote = 0, ""
    while i < len(line):
        ch = line[i]
        if quote == "'":
            end = line.find("'", i)
            end = len(line) if end == -1 else end
            out.append(_HOSTNAME_OUTPUT.sub(lambda _: TASK_HOST, line[i:end]))
            out.append(line[end : end + 1])
            i, quote = end + 1, ""
            continue
        if ch == "\\" and quote != "'":
            out.append(line[i : i + 2])
            i += 2
            continue
        if ch == "'" and quote == "":
            quote = "'"
        elif ch == '"':
            quote = "" if quote == '"' else ('"' if quote == "" else quote)
        out.append(ch)
        i += 1
    return "".join(out)


# (line, words, backgrounded, unconditional): unconditional is a command that starts its line's
# list (not after `&&` / `||`, not inside a `( … )` / `{ …; }` group on the line)
Command = tuple[int, list[str], bool, bool]
# a here-document: `<<EOF`, `<<-'EOF'`, `<< "END"` (not the here-string `<<<`)
_HEREDOC = re.compile(r"(?<!<)<<(?!<)(-?)\s*\\?(['\"]?)([A-Za-z_][\w.-]*)\2")


def commands(text: str, where: str) -> list[Command]:
    """Every command of a script: ``;``, ``&&``, ``|`` and newlines end one, a single ``&``
    ends one that runs in the background. A backslash at a line's end continues it (not in a
    comment); a quoted string may span lines (``ARGS="`` ... ``"``); a here-document's body is
    data, skipped to its delimiter. Each line is scanned once; a logical line that grows past
    :data:`MAX_LINE` is data too (base64, a heredoc without delimiter), skipped."""
    out: list[Command] = []
    buf, quote, start, lines = "", None, 0, 0
    state = _ListState()  # a list continued on the next line (`||` at a line's end), open groups
    heredoc: tuple[str, bool] | None = None  # (delimiter, tabs stripped) of a body being skipped
    for no, raw in enumerate(text.splitlines(), 1):
        if heredoc is not None:
            if (raw.lstrip("\t") if heredoc[1] else raw) == heredoc[0]:
                heredoc = None
            continue
        if len(raw) > MAX_LINE:
            buf, quote = "", None
            continue
        if not buf:
            start, lines = no, 0
        kept, quote = _without_comment(_ANSI_C.sub("'…'", raw) if quote is None else raw, quote)
        lines += 1
        continued = kept.endswith("\\") and not kept.endswith("\\\\") and quote != "'"
        buf += kept[:-1] if continued else kept
        if continued or quote is not None:
            if quote is not None and not continued:
                buf += "\n"
            if len(buf) > MAX_LINE or lines > MAX_QUOTED_LINES:
                buf, quote = "", None  # data, not a command: skipped
            continue
        if _array_open(buf):  # `CMD=(` ⏎ `torchrun` ⏎ `)`: one assignment over several lines
            buf = buf + " " if len(buf) <= MAX_LINE and lines <= MAX_QUOTED_LINES else ""
            continue
        line, buf = _marked(buf), ""
        doc = None if "((" in line else _HEREDOC.search(line)  # `(( 1 << N ))` is arithmetic
        if doc:
            heredoc = (doc.group(3), doc.group(1) == "-")
        if not line.strip():
            continue
        try:
            tokens = _words(line)
        except ValueError as exc:
            raise InputError(f"{where}:{start}: cannot read shell line: {exc}") from None
        out += _split_commands(start, tokens, state)
    if quote is not None and buf:
        raise InputError(f"{where}:{start}: cannot read shell line: No closing quotation")
    return out


# an array assignment: `CMD=(`, `ARGS+=(`, `local -a CMD=(`, `declare -a CMD=(`
_ARRAY_START = re.compile(r"^\s*(?:(?:declare|typeset|local)\s+(?:-\w+\s+)*)?[A-Za-z_]\w*\+?=\(")


def _array_open(text: str) -> bool:
    """True while an array assignment's ``(`` has no ``)`` outside quotes yet."""
    m = _ARRAY_START.match(text)
    if m is None:
        return False
    quote: str | None = None
    i = m.end()
    while i < len(text):
        ch = text[i]
        if ch == "\\" and quote != "'":
            i += 2
            continue
        if quote is not None:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == ")":
            return False
        i += 1
    return True


MAX_QUOTED_LINES = 200  # lines one quoted string may span (a usage text, DISTRIBUTED_ARGS="...")


_OUTSIDE = re.compile(r"[\\'\"#]")  # what changes the state outside quotes
_IN_DOUBLE = re.compile(r'[\\"]')


def _without_comment(line: str, quote: str | None) -> tuple[str, str | None]:
    """``line`` up to its comment, and the quote still open at its end. ``quote``: the quote
    open when the line starts. A ``#`` starts a comment only at the start of a word, outside
    quotes (``${#ARR[@]}``, ``a#b``, ``"#tag"`` are none; POSIX shell, 2.3 Token Recognition,
    rule 9); a backslash escapes the next character outside single quotes. The scan jumps from
    one special character to the next (a long quoted string is one step)."""
    i, n = 0, len(line)
    while i < n:
        if quote == "'":
            end = line.find("'", i)
            if end < 0:
                return line, quote
            quote, i = None, end + 1
            continue
        m = (_IN_DOUBLE if quote == '"' else _OUTSIDE).search(line, i)
        if m is None:
            return line, quote
        i, ch = m.start(), m.group()
        if ch == "\\":
            i += 2
        elif quote == '"':
            quote, i = None, i + 1
        elif ch == "#":
            if i == 0 or line[i - 1] in " \t;&|(":
                return line[:i], None
            i += 1
        else:
            quote, i = ch, i + 1
    return line, quote


def _marked(line: str) -> str:
    """A logical line with what the reader expands marked: C-style and ``$(seq)`` loop headers,
    ``$(( ))`` arithmetic, and command outputs, which are known when the script runs only."""
    line = _CFOR.sub(
        lambda m: f"for {m.group(1)} in __CFOR_{m.group(2)}_{m.group(4)}_{m.group(3) == '<='}__",
        line,
    )
    line = ARITH.sub(lambda m: "__AR_" + m.group(1).replace(" ", "").encode().hex() + "__", line)
    line = _SEQ.sub(lambda m: "__SEQ_" + "_".join(_hex(m.group(i)) for i in (1, 2, 3)) + "__", line)
    # the host's own name inside single quotes is expanded later, by each task's shell on its
    # own node: kept apart (TASK_HOST) from the batch shell's one expansion (review 57)
    line = _task_hostnames(line)
    # one word that stays a parameter (check does not simulate what it sets; review 25)
    for _ in range(MAX_NESTED_OUTPUTS):  # innermost first
        line, found = _COMMAND_OUTPUT.subn("$(…)", line)
        if not found:
            break
    return _SPACED_PARAM.sub("$(…)", line)


def _hex(operand: str | None) -> str:
    """A seq operand kept whole inside the loop marker (it may hold ``$`` and ``_``)."""
    return (operand or "").encode().hex()


def _words(line: str) -> list[str]:
    """The words of one logical line (its comment already cut)."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    lex.commenters = ""
    return list(lex)


@dataclass
class _ListState:
    """What one line leaves to the next: a connector at its end (`cmd ||` ⏎ `exit 1`) and the
    groups still open (`{` ⏎ … ⏎ `}`, `(` ⏎ … ⏎ `)`): commands there are conditional."""

    connector: bool = False
    groups: int = 0


def _split_commands(
    no: int, tokens: Sequence[str], state: _ListState | None = None
) -> list[Command]:
    """One line's tokens cut at ``; & && | ||``; ``2>&1`` and ``&> file`` are redirections."""
    state = state or _ListState()
    out: list[Command] = []
    cmd: list[str] = []
    skip = False
    unconditional = not state.connector  # the next command starts the line's list
    for i, tok in enumerate(tokens):
        if skip:
            skip = False
            continue
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if tok == "&" and cmd and cmd[-1].endswith(">"):  # 2>&1: the & and its fd belong to it
            cmd[-1] += "&" + after
            skip = True
            continue
        if tok == "&" and after.startswith(">"):  # &> file / &>> file
            cmd.append("&" + after)
            skip = True
            continue
        if tok and set(tok) <= set(";&|"):
            if cmd:
                out.append((no, cmd, tok == "&", unconditional and not state.groups))
            cmd = []
            unconditional = tok in (";", ";;", "&")
        else:
            if not cmd and tok[:1] in ("(", "{") and not tok.startswith("(("):
                state.groups += 1
            if tok in (")", "}") or (tok.endswith(")") and "(" not in tok and state.groups):
                state.groups = max(0, state.groups - 1)
            cmd.append(tok)
    if cmd:
        out.append((no, cmd, False, unconditional and not state.groups))
    state.connector = bool(tokens) and tokens[-1] in ("&&", "||", "|")
    return out
