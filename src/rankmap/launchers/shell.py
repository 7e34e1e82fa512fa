"""Shell/sbatch scripts: ``#SBATCH`` options, exported variables and launch lines, including
loops of single-process launches meant as one job (``for i in 0..7: CUDA_VISIBLE_DEVICES=$i
torchrun --nproc_per_node 1 ... &``). Only literal loop ranges are expanded; nothing is executed.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rankmap.errors import InputError, UsageError
from rankmap.launchers import (
    LaunchContext,
    LaunchPlan,
    check_launches,
    identify,
)
from rankmap.launchers.command import expand_word, parse_command, shell_body_index
from rankmap.launchers.shell_jobs import ShellLaunch, several_launches
from rankmap.launchers.shell_lex import ARITH, commands
from rankmap.launchers.slurm_options import batch_env, parse_sbatch_lines
from rankmap.numbers import int_or_none, parse_int

_BRACE = re.compile(r"^\{(\d+)\.\.(\d+)\}$")
_VAR = re.compile(r"\$\{(\w+)\}|\$(\w+)")  # in $(( )) arithmetic only
_NAME = re.compile(r"(?<![$\w])([A-Za-z_]\w*)")  # a bare variable name in $(( ))
# A word that is one variable (``$LAUNCHER``, ``${CMD}``): unquoted, the shell splits its value
# into words (POSIX field splitting; quotes are gone once a line is read, so a quoted
# "$LAUNCHER" is split too — a command held in a variable is the common case)
_WHOLE_VAR = re.compile(r"^\$(?:\{\w+\}|\w+|[@*]|\{[@*]\}|\{\w+\[[^]]*\]\})$")
# an array's element, all its elements or its length: ${CMD[0]}, ${CMD[@]}, ${CMD[*]}, ${#CMD[@]}
_ARRAY_REF = re.compile(r"\$\{(#?)([A-Za-z_]\w*)\[([^]]*)\]\}")
# `NAME=(` / `NAME+=(` and the first element, if on the same word
_ARRAY_HEAD = re.compile(r"^([A-Za-z_]\w*)(\+?)=\((.*)$", re.S)
# a function call's positional parameters
_POSITIONAL = (*map(str, range(1, 10)), "@", "*", "#")


@dataclass(frozen=True)
class ShellScript:
    """What a script says: #SBATCH options, exported variables, launches."""

    sbatch: Mapping[str, str]
    env: Mapping[str, str]
    launches: tuple[ShellLaunch, ...]
    unset: frozenset[str] = frozenset()  # `unset NAME` lines (not exported again later)
    unread: tuple[str, ...] = ()  # sourced files not followed: "env.sh (line 3)"

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` as the script leaves it for its launches: unset lines, then exports."""
        return {**{k: v for k, v in base.items() if k not in self.unset}, **self.env}


# what a `source FILE` line reads: the file's text, or None where it cannot be read
SourceReader = Callable[[str], "str | None"]


def parse_shell(
    text: str, where: str, base_env: Mapping[str, str], read_source: SourceReader | None = None
) -> ShellScript:
    """Read a shell script without running it; ``read_source`` gives the text of the files it
    sources (``source env.sh``, ``. ./config``), which are read in its place."""
    reader = _Reader(dict(base_env), where, read_source)
    for no, cmd, background, unconditional in commands(text, where):
        if reader.feed(cmd, no, background, unconditional):
            break  # `exit` at the top level: the lines below never run
    return ShellScript(
        parse_sbatch_lines(text),
        reader.env,
        tuple(reader.launches),
        frozenset(reader.unset),
        tuple(reader.unread),
    )


_NAME_HEAD = re.compile(r"^([A-Za-z_][\w-]*)(?:\(\))?$")
# Words that open and close a compound command (their bodies are nested)
_OPENERS = {"if": "fi", "case": "esac", "while": "done", "until": "done", "select": "done"}
_LOOPS = ("for", "while", "until", "select")
MAX_CALL_DEPTH = 8  # functions calling functions: deeper calls are not followed
MAX_STEPS = 100_000  # commands read, loops and calls replayed included: the work a script may take


@dataclass
class _Branches:
    """An open ``if`` or ``case``: which of its branches launched, what they assigned."""

    kind: str  # "if" or "case"
    branch_start: int  # launches when the current branch began
    launched: int = 0  # branches that launched something
    assigned: set[str] = field(default_factory=set)
    # arrays a branch assigns: their elements before the if / case (None: unset then)
    arrays_before: dict[str, dict[str, str] | None] = field(default_factory=dict)


class _Reader:
    """The script's state as its commands are read in order: variables, exports, launches, the
    functions it defines (their bodies run where they are called, with $1..$9), and the job it
    is in. A ``wait`` starts a new job, and so do the other branches of an ``if`` / ``case``
    that launch: launches of two jobs never run at once (review 34)."""

    def __init__(
        self, vars_: dict[str, str], where: str, read_source: SourceReader | None = None
    ) -> None:
        self.vars = vars_
        self.where = where
        self.read_source = read_source
        self.unread: list[str] = []
        self.sourcing: list[str] = []  # the files being sourced, outermost first
        self.env: dict[str, str] = {}
        self.exports = _Exports(set(vars_))  # the environment the script starts with
        self.unset: set[str] = set()
        self.launches: list[ShellLaunch] = []
        self.functions: dict[str, list[tuple[list[str], int, bool]]] = {}
        self.defining: tuple[str, list[tuple[list[str], int, bool]], int] | None = None
        self.head: str | None = None  # `name()` read, its `{` not yet
        self.loop: tuple[str, list[str], int] | None = None
        self.body: list[tuple[list[str], int, bool]] = []
        self.nested = 0  # loops opened inside the loop body being read
        self.depth = 0  # open if / case / while blocks
        self.open: list[_Branches] = []  # open ifs and cases
        self.job = 0
        self.calls = 0
        self.steps = 0

    def _step(self) -> None:
        """One more command read or replayed: past :data:`MAX_STEPS`, a one-line refusal."""
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise InputError(
                f"{self.where}: more than {MAX_STEPS} commands to follow (loops and calls "
                "included): too much to simulate"
            )

    def feed(self, cmd: list[str], no: int, background: bool, unconditional: bool = True) -> bool:
        """Read one command; True for an ``exit`` that ends the script (an unconditional one,
        outside every block, function and group)."""
        self._step()
        if self.defining is not None:
            self._define(cmd, no, background)
            return False
        if self._function_head(cmd, no, background):
            return False
        if cmd[0] == "exit" and self.loop is None:
            return unconditional and self.depth == 0 and self.calls == 0
        self._run(cmd, no, background)
        return False

    def _function_head(self, cmd: list[str], no: int, background: bool) -> bool:
        """A function definition: `name() {`, `name () {`, `function name [()] {`, or `name()`
        with its `{` on the next line. Only this syntax: `echo {` is a command."""
        if self.head is not None:
            name, self.head = self.head, None
            if cmd[0] == "{":
                self._start(name, cmd[1:], no, background)
                return True
        words = cmd[1:] if cmd[0] == "function" else cmd
        if cmd[0] == "function" or cmd[0].endswith("()") or cmd[1:2] == ["()"]:
            rest = words[2:] if words[1:2] == ["()"] else words[1:]
            m = _NAME_HEAD.match(words[0]) if words else None
            if m is None:
                return False
            if not rest:
                self.head = m.group(1)
                return True
            if rest[0] == "{":
                self._start(m.group(1), rest[1:], no, background)
                return True
        return False

    def _start(self, name: str, rest: list[str], no: int, background: bool) -> None:
        self.defining = (name, [], 0)
        if rest:  # `go() { torchrun ...; }`: the body starts on the same line
            self._define(rest, no, background)

    def _define(self, cmd: list[str], no: int, background: bool) -> None:
        """A command of a function body; the body ends at its own `}` (a `{ …; }` group
        inside it opens and closes one level)."""
        assert self.defining is not None
        name, body, braces = self.defining
        closing = cmd[0] == "}" or (cmd[-1] == "}" and cmd[0] != "{")
        if cmd[0] == "{":
            braces += 1
        if closing and braces == 0:
            if cmd[0] != "}":
                body.append((cmd[:-1], no, background))
            self.functions[name] = body
            self.defining = None
            return
        if closing and cmd[0] == "}":
            braces -= 1
        body.append((cmd, no, background))
        self.defining = (name, body, braces)

    def _run(self, cmd: list[str], no: int, background: bool) -> None:
        if self.loop is not None:
            self._loop_body(cmd, no, background)
            return
        cmd = _ungrouped(cmd)
        if not cmd:
            return
        word = cmd[0]
        if self.open and self.open[-1].kind == "case" and _case_pattern(word):
            self._next_branch()
            cmd = cmd[1:]
            if not cmd:
                return
            word = cmd[0]
        if word in ("then", "do", "elif", "else"):
            if word in ("elif", "else") and self.open:
                self._next_branch()
            cmd = cmd[1:]
            if not cmd or word == "elif":
                return
            word = cmd[0]
        if word in _OPENERS:
            self.depth += 1
            if word in ("if", "case"):
                self.open.append(_Branches(word, len(self.launches)))
            condition = [w for w in cmd[1:] if w != "!"]
            if word == "if" and condition and condition[0] not in _TESTS:
                self._statement(condition, no, background)  # `if torchrun ...; then`
            return
        if word in ("((", "let") or word.startswith("(("):
            self._forget(set(_ARITH_TARGET.findall(" ".join(cmd))))  # `(( N = N * 2 ))`
            return
        if word in ("fi", "esac") or word == "done":
            self.depth = max(0, self.depth - 1)
            if word in ("fi", "esac") and self.open:
                self._close_branches()
            return
        if word == "for":
            self.loop, self.body = _loop_header(cmd, self.vars, no, self.where), []
            return
        if word == "wait" and cmd[1:2] != ["-n"]:
            self.job += 1  # the jobs before it (all of them, or those it names) have ended
            return
        if word == "exit":
            return  # inside a block or a function: conditional (see feed)
        if word in self.functions and self.calls < MAX_CALL_DEPTH:
            self._call(word, cmd[1:])
            return
        if word in ("source", ".") and len(cmd) > 1:
            self._source(_expand(cmd[1], self.vars), no)
            return
        self._statement(cmd, no, background)

    def _source(self, name: str, no: int) -> None:
        """`source FILE`: its commands read here, as if written on this line (its launches and
        exports are the script's own); a file that cannot be read is named, not guessed."""
        free = name not in self.sourcing and len(self.sourcing) < MAX_CALL_DEPTH
        text = self.read_source(name) if self.read_source is not None and free else None
        try:
            sourced = commands(text, name) if text is not None else None
        except InputError:
            sourced = None
        if sourced is None:
            self.unread.append(f"{name} (line {no})")
            return
        self.sourcing.append(name)
        self.calls += 1  # an `exit` in it ends no more than a function's would here
        for _, cmd, background, unconditional in sourced:
            self.feed(cmd, no, background, unconditional)
        self.calls -= 1
        self.sourcing.pop()

    def _loop_body(self, cmd: list[str], no: int, background: bool) -> None:
        """A command inside a `for` loop: kept to be replayed per item at its own `done`."""
        if cmd[0] in _LOOPS:
            self.nested += 1
        elif cmd[0] == "done" and self.nested:
            self.nested -= 1
        elif cmd[0] == "done":
            self._end_loop()
            return
        self.body.append((cmd, no, background))

    def _next_branch(self) -> None:
        """The end of a branch of the innermost if / case: the next branch runs instead of it,
        so its launches are another job, and what the branch assigned is not known in the next."""
        state = self.open[-1]
        if len(self.launches) > state.branch_start:
            state.launched += 1
            self.job += 1
        state.branch_start = len(self.launches)
        self._end_branch(state)

    def _close_branches(self) -> None:
        """`fi` / `esac`: what follows runs after whichever branch ran — another job where two
        branches launched (alternatives), and no value a branch assigned is known."""
        state = self.open.pop()
        if len(self.launches) > state.branch_start:
            state.launched += 1
        if state.launched > 1:
            self.job += 1
        self._end_branch(state)

    def _end_branch(self, state: _Branches) -> None:
        """What a branch assigned is not known after it; an array it changed (`CMD+=(--debug)`
        in an `if`) is the one it was before the branch — the path where the branch did not run
        — or, unset before, the branch's own (a command held in an array is not lost: review
        45)."""
        for name, before in state.arrays_before.items():
            state.assigned.discard(name)
            if before is not None:
                self._drop_array(name)
                self.vars.update(before)
        state.arrays_before.clear()
        self._forget(state.assigned)

    def _forget(self, names: set[str]) -> None:
        for name in names:
            self._drop_array(name)
            if name in self.env or name in self.exports.names or self.exports.all:
                self.env[name] = f"${name}"  # exported, value unknown: not simulated
        names.clear()

    def _call(self, name: str, args: list[str]) -> None:
        """A function's body where it is called, with its arguments as $1..$9, ``$@`` and
        ``$#`` (``shift`` drops the first ones)."""
        saved = {k: self.vars.get(k) for k in _POSITIONAL}
        self._bind([_expand(arg, self.vars) for arg in args])
        self.calls += 1
        body, self.functions[name] = self.functions[name], []  # no recursion into itself
        for bcmd, bno, bg in body:
            if bcmd[0] == "local":  # `local n=$1`: the function's own variable
                bcmd = bcmd[1:] or ["true"]
            self._step()
            if bcmd[0] == "shift":
                n = int(bcmd[1]) if bcmd[1:2] and bcmd[1].isdecimal() else 1
                self._bind((self.vars.get("@") or "").split()[n:])
                continue
            self._run(bcmd, bno, bg)  # (a `return` may be conditional: the body reads on)
        self.functions[name] = body
        self.calls -= 1
        for k, v in saved.items():
            if v is None:
                self.vars.pop(k, None)
            else:
                self.vars[k] = v

    def _bind(self, args: list[str]) -> None:
        """The positional parameters of a function call."""
        for k in _POSITIONAL:
            self.vars.pop(k, None)
        for k, arg in zip(map(str, range(1, 10)), args, strict=False):
            self.vars[k] = arg
        self.vars["@"] = self.vars["*"] = " ".join(args)
        self.vars["#"] = str(len(args))

    def _end_loop(self) -> None:
        """The loop's body once per item (`port=$((29500 + i))` assignments included, review
        24); loops inside it are replayed as they come."""
        if self.loop is None:
            return
        (var, items, _), body = self.loop, self.body
        self.loop, self.body, self.nested = None, [], 0
        for item in items:
            self.vars[var] = item
            for bcmd, bno, bg in body:
                self._step()
                self._run(bcmd, bno, bg)
            check_launches(len(self.launches), self.where)

    def _statement(self, cmd: list[str], no: int, background: bool) -> None:
        array = _array_assignment(cmd)
        if array is not None:
            self._assign_array(*array)
        elif _assigns(cmd):
            _assign(cmd, self.vars, self.env, self.unset, self.exports)
            if self.open:  # known in this branch; forgotten when another branch or fi comes
                words = cmd[1:] if cmd[0] in ("export", "local") else cmd
                self.open[-1].assigned |= {w.partition("=")[0] for w in words if "=" in w}
        elif cmd[0] == "set" and _allexport(cmd[1:]):
            self.exports.all = True
        elif cmd[0] == "unset":
            for name in (t for t in cmd[1:] if t.isidentifier()):
                self.env.pop(name, None)
                self.vars.pop(name, None)
                self.unset.add(name)
        else:
            self._add(_launch(cmd, self.vars, self.env, no, background))

    def _assign_array(self, name: str, append: bool, words: list[str]) -> None:
        """``CMD=(torchrun --nproc_per_node 8 train.py)`` / ``CMD+=(--nnodes 2)``: the elements
        as ``CMD[0]``, ``CMD[1]``… and all of them as ``CMD[@]`` (an unquoted ``$ARGS`` inside
        splits into words, as in a launch line); ``$CMD`` is the first element."""
        if self.open and name not in self.open[-1].arrays_before:
            self.open[-1].arrays_before[name] = self._array_state(name)
        old = (self.vars.get(f"{name}[@]") or "").split() if append else []
        elements = old + [field for word in words for field in _fields(word, self.vars)]
        self._drop_array(name)
        for i, value in enumerate(elements):
            self.vars[f"{name}[{i}]"] = value
        self.vars[f"{name}[@]"] = " ".join(elements)
        if elements:
            self.vars[name] = elements[0]
        if self.open:
            self.open[-1].assigned.add(name)

    def _array_state(self, name: str) -> dict[str, str] | None:
        """The variables that hold array ``name`` now (None: it is not set)."""
        if f"{name}[@]" not in self.vars:
            return None
        keys = [name, *(k for k in self.vars if k.startswith(f"{name}["))]
        return {k: self.vars[k] for k in keys if k in self.vars}

    def _drop_array(self, name: str) -> None:
        self.vars.pop(name, None)
        for key in [k for k in self.vars if k.startswith(f"{name}[")]:
            del self.vars[key]

    def _add(self, launches: list[ShellLaunch]) -> None:
        self.launches += [replace(sl, job=self.job) for sl in launches]


# the test commands an `if` runs (not a program whose success it tests)
_TESTS = ("[", "[[", "test", "((", "true", "false", ":", "command", "type", "grep")
# names an arithmetic command or `let` assigns: `N = N * 2`, `i++`, `N+=1`
_ARITH_TARGET = re.compile(r"\b([A-Za-z_]\w*)\s*(?:[-+*/%]?=(?!=)|\+\+|--)")


def _ungrouped(cmd: list[str]) -> list[str]:
    """A command without the group around it: `( torchrun …)`, `{ torchrun …; }`, `(cd d`."""
    words = list(cmd)
    while words and words[0] in ("(", "{", "!"):
        words = words[1:]
    if words and words[0].startswith("(") and not words[0].startswith("(("):
        words[0] = words[0][1:]
    while words and words[-1] in (")", "}"):
        words = words[:-1]
    if len(words) > 1 and words[-1].endswith(")") and "(" not in words[-1]:
        words[-1] = words[-1][:-1]  # (one word ending in `)` may be a case pattern: kept)
    return [w for w in words if w]


def _array_assignment(cmd: list[str]) -> tuple[str, bool, list[str]] | None:
    """``NAME=(a b)`` / ``NAME+=(c)`` / ``local -a NAME=(…)`` as (name, append, words), or None.
    The closing ``)`` may be a word of its own or end the last one (and may be gone already,
    as a group's ``)`` is)."""
    i = 0
    while i < len(cmd) - 1 and (cmd[i] in ("declare", "typeset", "local") or cmd[i][:1] == "-"):
        i += 1
    m = _ARRAY_HEAD.match(cmd[i])
    if m is None:
        return None
    words = ([m.group(3)] if m.group(3) else []) + cmd[i + 1 :]
    text = " ".join(words)
    if words and text.count(")") > text.count("("):
        words[-1] = words[-1][:-1]
    return m.group(1), m.group(2) == "+", [w for w in words if w not in ("", ")")]


def _case_pattern(word: str) -> bool:
    """A `case` branch's pattern word: `small)`, `a|b)`, `*)`, `(x)`."""
    return word.endswith(")") and not word.endswith("()") and "=" not in word and "$(" not in word


def _assigns(cmd: list[str]) -> bool:
    """``export A=1 B=2``, ``declare -x A=1`` or ``A=1`` alone on its line."""
    return (
        cmd[0] == "export"
        or _declared_export(cmd)
        or (len(cmd) == 1 and "=" in cmd[0] and cmd[0].split("=")[0].isidentifier())
    )


def _allexport(words: list[str]) -> bool:
    """``set -a``, ``set -ae``, ``set -o allexport``."""
    flags = [w for w in words if w.startswith("-") and not w.startswith("--") and w != "-o"]
    return any("a" in w[1:] for w in flags) or "allexport" in words


def _declared_export(cmd: list[str]) -> bool:
    """``declare -x A=1`` / ``typeset -gx A=1``: an export by another name."""
    return cmd[0] in ("declare", "typeset") and any(w.startswith("-") and "x" in w for w in cmd[1:])


@dataclass
class _Exports:
    """What a shell exports: the names it started with or exported, all after ``set -a``."""

    names: set[str]
    all: bool = False


def _assign(
    cmd: list[str], vars_: dict[str, str], env: dict[str, str], unset: set[str], exports: _Exports
) -> None:
    """``A=1`` (the shell's own, unless A is exported or ``set -a`` is on), ``export A=1``,
    ``export A`` (exports the value A has)."""
    exported = cmd[0] == "export" or _declared_export(cmd) or exports.all
    for tok in cmd[1:] if cmd[0] in ("export", "declare", "typeset") else cmd:
        name, eq, value = tok.partition("=")
        if not name.isidentifier():
            continue
        if eq:
            vars_[name] = _expand(value, vars_)
        elif name not in vars_:
            continue
        if exported or name in env or name in exports.names:
            env[name] = vars_[name]
        unset.discard(name)


def _loop_header(
    cmd: list[str], vars_: Mapping[str, str], no: int, where: str = "script"
) -> tuple[str, list[str], int]:
    var = cmd[1] if len(cmd) > 1 else "_"
    items: list[str] = []
    at = f"{where}:{no}"

    def num(text: str) -> int:
        return parse_int(text, f"{at}: loop bound")

    for tok in cmd[3:] if len(cmd) > 2 and cmd[2] == "in" else []:
        m = _BRACE.match(tok)
        if m:
            items += _loop_values(num(m.group(1)), num(m.group(2)) + 1, 1, at, len(items))
        elif tok.startswith("__SEQ_"):
            marked = _SEQ_MARK.fullmatch(tok)
            raw = [_unhex(h) for h in marked.groups()] if marked else [None]
            if any(r is None for r in raw) or not all(_known_bound(r or "", vars_) for r in raw):
                items.append("$(…)")  # a bound known when the script runs only
                continue
            a, b, c = (_expand(r or "", vars_) for r in raw)
            first, step, last = (
                (num(a), num(b), num(c)) if c else (num(a) if b else 1, 1, num(b or a))
            )
            stop = last + 1 if step > 0 else last - 1  # seq 3 -1 0 counts down
            items += _loop_values(first, stop, step, at, len(items))
        elif tok.startswith("__CFOR_"):
            a, b, le = tok[7:-2].split("_", 1)[0], *tok[7:-2].split("_", 1)[1].rsplit("_", 1)
            b = b if b.isdecimal() else vars_.get(b, b)  # a bound held in a variable
            if not b.isdecimal():  # computed when the script runs: one run, its value unknown
                items.append("$(…)")
                continue
            items += _loop_values(num(a), num(b) + (1 if le == "True" else 0), 1, at, len(items))
        else:  # an unquoted `$GPUS` ("0 1 2 3") splits into words (quotes are gone by now)
            items += _expand(tok, vars_).split() or [tok]
        if len(items) > MAX_STEPS:
            raise InputError(f"{at}: a loop of too many items to simulate (more than {MAX_STEPS})")
    return var, items, no


# the reader's markers (shell_lex._marked): arithmetic, and seq's three operands, hex-encoded
_AR_MARK = re.compile(r"__AR_([0-9a-f]*)__")
_SEQ_MARK = re.compile(r"__SEQ_([0-9a-f]*)_([0-9a-f]*)_([0-9a-f]*)__")


def _unhex(text: str) -> str | None:
    """A marker's hex-encoded text, or None where the word only looks like a marker (a script
    may hold ``__SEQ_…`` itself: review 57's fuzzing)."""
    try:
        return bytes.fromhex(text).decode()
    except (ValueError, UnicodeDecodeError):
        return None


def _known_bound(operand: str, vars_: Mapping[str, str]) -> bool:
    """Whether a seq operand (a number, ``$N``, ``$((N-1))`` marked as arithmetic) rests only on
    variables the script set to numbers: a command's output or an unset variable inside it is
    known when the script runs only (not 0)."""
    text = _AR_MARK.sub(lambda m: _unhex(m.group(1)) or "$(…)", operand)
    if "$(" in text or "`" in text or "…" in text:
        return False
    names = set(re.findall(r"\$\{?#?([A-Za-z_]\w*)", text))
    if text and not text.lstrip("-").isdecimal() and "$" not in text:
        names |= set(re.findall(r"[A-Za-z_]\w*", text))  # a bare name inside $(( ))
    return all(vars_.get(n, "$").lstrip("-").isdecimal() or f"{n}[@]" in vars_ for n in names)


def _loop_values(first: int, stop: int, step: int, at: str, have: int) -> list[str]:
    """``range(first, stop, step)`` as words, refused before it is built when too long."""
    if step == 0:
        return []
    if have + max(0, (stop - first + step - (1 if step > 0 else -1)) // step) > MAX_STEPS:
        raise InputError(f"{at}: a loop of too many items to simulate (more than {MAX_STEPS})")
    return [str(i) for i in range(first, stop, step)]


def _launch(
    cmd: list[str], vars_: Mapping[str, str], env: Mapping[str, str], no: int, background: bool
) -> list[ShellLaunch]:
    body = shell_body_index(cmd)
    words: list[str] = []
    for i, token in enumerate(cmd):
        words += [token] if i == body else _fields(token, vars_)
    line = parse_command(words, {})
    kind = identify(list(line.argv))
    if kind is None or kind == "shell":
        return []
    return [ShellLaunch({**env, **line.assigned}, line.argv, no, line.unset, background)]


def _fields(token: str, vars_: Mapping[str, str]) -> list[str]:
    """The words ``token`` becomes: a word that is one variable (`$LAUNCHER`, `"${CMD[@]}"`)
    splits into its value's words — a variable set empty (`EXTRA=""`) leaves none, an unknown
    one stays itself; any other word is expanded in place."""
    value = _expand(token, vars_)
    return value.split() if _WHOLE_VAR.match(token) and value != token else [value]


def _expand(token: str, vars_: Mapping[str, str]) -> str:
    def arith(m: re.Match[str]) -> str:
        expr = _unhex(m.group(1))
        if expr is None:  # not the reader's own marker (a word that only looks like one)
            return m.group(0)
        if "[" in expr:  # ${#GPUS[@]}, ${GPUS[1]} inside the arithmetic
            expr = _ARRAY_REF.sub(lambda a: _array_ref(a, vars_), expr)
        names = {v.group(1) or v.group(2) for v in _VAR.finditer(expr)} | set(_NAME.findall(expr))
        if any("$" in vars_.get(n, "") for n in names):  # a task's own variable: its shell's
            return f"$(({expr}))"
        return arithmetic(expr, vars_)

    token = _AR_MARK.sub(arith, token)
    if "[" in token:
        token = _ARRAY_REF.sub(lambda m: _array_ref(m, vars_), token)
    return expand_word(token, vars_)


def _array_ref(m: re.Match[str], vars_: Mapping[str, str]) -> str:
    """``${CMD[@]}`` / ``${CMD[*]}`` (all elements), ``${CMD[1]}``, ``${CMD[$i]}``, ``${#CMD[@]}``
    from the elements the script assigned; an array it did not assign stays as written."""
    count, name, index = m.groups()
    index = "@" if index == "*" else expand_word(index, vars_)
    if f"{name}[@]" not in vars_:
        return m.group(0)
    if count:
        return str(len(vars_[f"{name}[@]"].split()))
    return vars_.get(f"{name}[{index}]", "" if index.isdecimal() else m.group(0))


def arithmetic(expr: str, vars_: Mapping[str, str]) -> str:
    """``$(( expr ))`` as bash computes it, from ``vars_``."""
    return str(_eval(_VAR.sub(lambda v: vars_.get(v.group(1) or v.group(2), "0"), expr), vars_))


def expand_arithmetic(text: str, vars_: Mapping[str, str]) -> str:
    """Every ``$(( expr ))`` left in ``text`` computed from ``vars_`` (a task's variables)."""
    return ARITH.sub(lambda m: arithmetic(m.group(1), vars_), text)


def _eval(expr: str, vars_: Mapping[str, str]) -> int:
    """Shell arithmetic on literals and variables: + - * / %."""
    try:
        tree = ast.parse(expr, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return 0

    def ev(n: ast.AST) -> int:
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return _wrap64(n.value)
        if isinstance(n, ast.Name):
            v = vars_.get(n.id, "0")
            return _wrap64(int_or_none(v) or 0)
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            return -ev(n.operand)
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            ops = {ast.Add: a + b, ast.Sub: a - b, ast.Mult: a * b}
            if type(n.op) in ops:
                return _wrap64(ops[type(n.op)])
            if isinstance(n.op, (ast.Div, ast.FloorDiv)):
                return a // b if b else 0
            if isinstance(n.op, ast.Mod):
                return a % b if b else 0
        return 0

    try:
        return ev(tree)
    except RecursionError:
        return 0


def _wrap64(value: int) -> int:
    """Bash arithmetic is signed 64-bit and wraps; so does this (and no number grows unbounded)."""
    return ((value + 2**63) % 2**64) - 2**63


def simulate_file(path: str | Path, ctx: LaunchContext) -> LaunchPlan:
    """``bash run.sh`` as the launch command."""
    return simulate_shell(Path(path), ctx, argv=())


def simulate_shell(path: Path, ctx: LaunchContext, *, argv: Sequence[str]) -> LaunchPlan:
    """Plan of a shell/sbatch script (``--shell FILE``); ``argv``, when given, is the launch."""
    return simulate_text(ctx.read(path, "--shell"), path, ctx, argv=argv)


def simulate_text(
    text: str, path: Path, ctx: LaunchContext, *, argv: Sequence[str] = ()
) -> LaunchPlan:
    """Plan of a script's text (a file, or the command string of ``bash -c '...'``)."""
    job = batch_env({**parse_sbatch_lines(text), **ctx.sbatch}, ctx.nodes)
    guessed: list[str] = []
    script = parse_shell(text, str(path), {**job, **ctx.env}, _source_reader(path, ctx, guessed))
    # what the batch step's processes inherit from Slurm itself: its GPUs (ctx.env, the user's
    # own --env, wins)
    step = {k: v for k, v in job.items() if k in ("CUDA_VISIBLE_DEVICES", "SLURM_JOB_GPUS")}
    sub = replace(
        ctx, env=script.environment({**step, **ctx.env}), sbatch={**script.sbatch, **ctx.sbatch}
    )
    if argv:
        return ctx.launch(argv, sub)
    if not script.launches:
        raise UsageError(f"{path}: no launch command found (torchrun, srun, mpirun, python ...)")
    if len(script.launches) == 1:
        plan = ctx.launch(script.launches[0].command, sub)
    else:
        plan = several_launches(script.launches, sub, path)
    notes: list[str] = []
    if (
        step
        and plan.launcher != "srun"
        and sub.env.get("CUDA_VISIBLE_DEVICES") == step["CUDA_VISIBLE_DEVICES"]
    ):
        notes.append(
            f"Slurm sets CUDA_VISIBLE_DEVICES={step['CUDA_VISIBLE_DEVICES']} for the batch step "
            "(the GPUs of its #SBATCH request; the node's first ones assumed)"
        )
    if guessed:
        notes.append(
            f"Read the sourced {', '.join(dict.fromkeys(guessed))} (its directory is computed "
            "when the job runs; the script's own assumed)"
        )
    if script.unread:
        notes.append(
            f"Not read: the file{'s' if len(script.unread) > 1 else ''} sourced at "
            f"{', '.join(script.unread[:3])}{' …' if len(script.unread) > 3 else ''} "
            "(what it sets is unknown here)"
        )
    return replace(plan, notes=(*plan.notes, *notes)) if notes else plan


# the directory of the running script, computed when it runs: `$(dirname "$0")`,
# `$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)` (a command's output, marked `$(…)`), or
# `${BASH_SOURCE%/*}` / `${0%/*}`
_SCRIPT_DIR = re.compile(r"^(?:\$\(…\)|\$\{(?:BASH_SOURCE(?:\[0\])?|0)%/\*\})$")


def _source_reader(path: Path, ctx: LaunchContext, guessed: list[str]) -> SourceReader:
    """How the script's `source FILE` lines are read: FILE beside the script, else relative to
    the working directory (where the shell resolves it); `$(dirname "$0")/FILE` as FILE beside
    the script (named in ``guessed``); None when none of these is a readable file or the name is
    computed otherwise."""

    def text_of(candidate: Path, name: str) -> str | None:
        if not ctx.files.is_file(candidate):
            return None
        try:
            return ctx.files.read_text(candidate, kind="config", what=f"source {name!r}")
        except InputError:
            return None

    def read(name: str) -> str | None:
        head, _, tail = name.rpartition("/")
        if _SCRIPT_DIR.match(head) and tail and "$" not in tail and "…" not in tail:
            text = text_of(path.parent / tail, name)
            if text is not None:
                guessed.append(f"{name} as {tail} beside the script")
            return text
        if not name or "$" in name or "…" in name:
            return None
        for candidate in dict.fromkeys((path.parent / name, ctx.path(name))):
            if (text := text_of(candidate, name)) is not None:
                return text
        return None

    return read
