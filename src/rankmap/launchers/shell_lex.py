"""Shell script text to commands: lines joined at backslashes and inside quoted strings, cut at
``;``, ``&&``, ``|`` and ``&``, with comments, ``$(seq)`` / C-style loop headers and command
outputs marked for the reader (:mod:`rankmap.launchers.shell`). Nothing is executed.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

from rankmap.errors import InputError

ARITH = re.compile(r"\$\(\((.*?)\)\)")
_SEQ = re.compile(r"\$\(\s*seq\s+(\d+)(?:\s+(\d+))?(?:\s+(\d+))?\s*\)")
_CFOR = re.compile(r"for\s*\(\(\s*(\w+)\s*=\s*(\d+)\s*;\s*\w+\s*(<=?)\s*(\d+)\s*;[^)]*\)\)")
# NOTE: a longer line (after joining ``\\`` continuations) is data - a heredoc body, base64 - not
# a launch line; shlex reads one character at a time and is quadratic in a token's length, so
# such lines are skipped instead of tokenised (a 20 MB line would otherwise take hours).
MAX_LINE = 16 * 1024


_COMMAND_OUTPUT = re.compile(r"`[^`\n]*`|\$\((?!\()[^()\n]*\)")


def commands(text: str, where: str) -> list[tuple[int, list[str], bool]]:
    """(line, words, backgrounded) of every command: ``;``, ``&&``, ``|`` and newlines end a
    command, a single ``&`` ends one that runs in the background."""
    out: list[tuple[int, list[str], bool]] = []
    lines = text.replace("\\\n", " ").splitlines()
    pending, start = "", 0  # a quoted string still open: its lines so far, its first line
    for no, raw in enumerate(lines, 1):
        if len(raw) > MAX_LINE:
            continue
        if pending:
            raw, no = pending + "\n" + raw, start
        line = _CFOR.sub(
            lambda m: (
                f"for {m.group(1)} in __CFOR_{m.group(2)}_{m.group(4)}_{m.group(3) == '<='}__"
            ),
            raw,
        )
        line = _SEQ.sub(
            lambda m: f"__SEQ_{m.group(1)}_{m.group(2) or ''}_{m.group(3) or ''}__", line
        )
        line = ARITH.sub(
            lambda m: "__AR_" + m.group(1).replace(" ", "").encode().hex() + "__", line
        )
        # a command's output (`cmd`, $(cmd)) is known when the script runs only: one word that
        # stays a parameter (check does not simulate what it sets; review 25)
        line = _COMMAND_OUTPUT.sub("$(…)", line)
        if line.lstrip().startswith("#") and not pending:
            continue
        try:
            tokens = _words(line)
        except ValueError as exc:
            if "closing quotation" in str(exc) and raw.count("\n") < MAX_QUOTED_LINES:
                pending, start = raw, no  # a quoted string over several lines: read on
                continue
            raise InputError(f"{where}:{no}: cannot read shell line: {exc}") from None
        pending = ""
        out += _split_commands(no, tokens)
    if pending:
        raise InputError(f"{where}:{start}: cannot read shell line: No closing quotation")
    return out


MAX_QUOTED_LINES = 200  # lines one quoted string may span (a usage text, DISTRIBUTED_ARGS="...")


def _words(line: str) -> list[str]:
    """The words of one (logical) line. A ``#`` starts a comment only at the start of a word
    (``${#ARR[@]}`` is no comment; POSIX shell, 2.3 Token Recognition, rule 9)."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    lex.commenters = ""
    words: list[str] = []
    for tok in lex:
        if tok.startswith("#") and not _quoted_hash(line, tok):
            break
        words.append(tok)
    return words


def _quoted_hash(line: str, tok: str) -> bool:
    """Whether the ``#`` word comes from a quoted string ("'#tag'"), not a comment."""
    return f"'{tok}" in line or f'"{tok}' in line


def _split_commands(no: int, tokens: Sequence[str]) -> list[tuple[int, list[str], bool]]:
    """One line's tokens cut at ``; & && | ||``; ``2>&1`` and ``&> file`` are redirections."""
    out: list[tuple[int, list[str], bool]] = []
    cmd: list[str] = []
    skip = False
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
                out.append((no, cmd, tok == "&"))
            cmd = []
        else:
            cmd.append(tok)
    if cmd:
        out.append((no, cmd, False))
    return out
