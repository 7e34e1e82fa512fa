"""A pasted issue read as a document: split into segments, each of one kind.

Kinds: ``log`` (program output, tracebacks, NCCL lines), ``code`` (Python: fenced ``python``
blocks, ``import``/``def``/assignment lines), ``shell`` (``$ `` prompts, launcher command lines,
fenced ``bash``/``sh``/``console`` blocks), ``config`` (fenced ``yaml``/``json`` blocks, YAML
mappings), ``env`` (``KEY=value``, ``export KEY=value``), ``smi`` (``nvidia-smi``/``rocm-smi``
tables) and ``prose`` (what the reporter wrote). Markdown fences and their info string decide
first; outside fences every line is classified and runs of one kind become a segment (blank
lines belong to the segment they are in). Pure and bounded: at most :data:`MAX_LINES` lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rankmap.explain.prefix import PDSH_HOST

MAX_LINES = 20_000
MAX_LINE_CHARS = 4096

_FENCE = re.compile(r"^\s*(?:>\s*)*(```+|~~~+)\s*([\w+-]*)")
_QUOTE = re.compile(r"^\s*(?:>\s?)+")
_FENCE_KIND = {
    "python": "code",
    "py": "code",
    "python3": "code",
    "ipython": "code",
    "bash": "shell",
    "sh": "shell",
    "shell": "shell",
    "console": "shell",
    "zsh": "shell",
    "shell-session": "shell",
    "yaml": "config",
    "yml": "config",
    "json": "config",
    "toml": "config",
    "ini": "config",
}
LAUNCHER_WORDS = (
    r"torchrun|python[\d.]*\s+-m\s+torch\.distributed\.(?:launch|run)|accelerate\s+launch|"
    r"deepspeed|srun|sbatch|salloc|mpirun|mpiexec|horovodrun|jsrun|vllm\s+serve|"
    r"python[\d.]*\s+-m\s+(?:vllm|sglang)\S*|docker\s+run|kubectl|ray\s+start|nvidia-smi|"
    r"python[\d.]*\s+\S+\.py|\S*_perf\b"
)
# "$ cmd", "(env) user@host:~/dir$ cmd", "node1$ cmd", "[user@host dir]$ cmd"
_PROMPT = re.compile(
    r"^\s*(?:\(\S+\)\s*)?(?:[\w.@-]+(?::[~/][^$#\n]*)?|\[[\w.@-]+(?: [^\]\n]*)?\])?[$#]\s+"
    r"(?P<cmd>\S.*)$"
)
# "Launch: horovodrun -np 4 ...", "Command: `torchrun ...`": a caption before a launch command
# on its line (review 63); the caption is no prompt (no machine name) and is stripped
_CAPTION = re.compile(
    r"^\s*(?:\*\*)?(?:launch(?:ed)?(?: (?:with|using|by|command|cmd|line|script))?|"
    r"(?:the )?command(?: line)?|cmd|run(?: with| command)?|i (?:run|ran|launch|launched|start|"
    r"started)(?: it| the job| training)?(?: with)?|started with|repro(?:duce)?)(?:\*\*)?"
    # (no end anchor: a greedy run to the line's end or a backtick, no backtracking over spaces;
    # not "usage:", which precedes a launcher's own help text)
    rf"\s*[:：]\s*(?:\*\*)?\s*`?(?P<cmd>(?:{LAUNCHER_WORDS})\s[^`\n]*)",
    re.IGNORECASE,
)
# a "$ " prompt (not "# ", also a comment or a heading)
_DOLLAR_PROMPT = re.compile(r"^\s*(?:\(\S+\)\s*)?(?:[\w.@-]+(?::[~/][^$#\n]*)?)?\$\s+\S")
_LAUNCH_LINE = re.compile(
    rf"^\s*(?:[!+]\s*)?(?:(?:export\s+)?[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\S*/)?(?:{LAUNCHER_WORDS})(?:\s|$)"
)
# A batch script's own lines: its shebang and its #SBATCH directives (launchers.md §5).
_SCRIPT_LINE = re.compile(r"^\s*(?:#SBATCH\s|#!\s*/\S*(?:bash|sh|zsh)\b)")
# a sentence may follow the value after full-width punctuation (``export X=5，但是…``): the value
# ends there and the rest is the reporter's (:func:`env_sentences`)
_WIDE_PUNCT = "\u3000-\u303f\uff00-\uffef"
_WIDE_PUNCT_CHARS = "，。；：、！？　"
_ENV = re.compile(
    r"^\s*(?:export\s+|set\s+|-x\s+)?(?P<k>[A-Z_][A-Z0-9_]{2,})="
    # (a shell comment may follow: "NNODES=4   # TODO take from slurm", review 72)
    rf"(?P<v>[^\s{_WIDE_PUNCT}]*)(?P<rest>[{_WIDE_PUNCT}]\S*)?\s*(?:\s#.*)?$"
)
_SMI = re.compile(
    r"NVIDIA-SMI \d|^\s*\|\s*\d+\s+\S.*\|\s*[0-9A-Fa-f]{8}:[0-9A-Fa-f]{2}:|ROCm System Management|"
    r"^\s*\+-{5,}|^\s*\|\s*GPU\s+Name|^\s*\|=+|^GPU \d+: .*\(UUID: |^\s*MIG \d+g\.\d+gb|"
    # `nvidia-smi --query-gpu=... --format=csv`: its header, and its rows that hold a bus id
    # (reference/nvidia_smi_formats.md §4)
    r"^\s*(?:index|name|pci\.bus_id|uuid)\s*,\s*(?:index|name|pci\.bus_id|uuid|memory\.\w+)\b|"
    r"^\s*\d+\s*,.*,\s*(?:0000)?[0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d\s*(?:,|$)"
)
_CODE = re.compile(
    r"^\s*(?:import \w|from [\w.]+ import |def \w+\(|class \w+[(:]|if __name__|@[\w.]+(?:\(.*\))?\s*$|"
    # for / with / except are statements only with their colon ("with environment variable X
    # than ..." is a sentence)
    r"(?:self\.)?[\w.\[\]'\"]+\s*=\s*\S|for \w+(?:, ?\w+)* in .*:\s*(?:#.*)?$|with \w.*:\s*(?:#.*)?$|"
    r"return\b|torch\.\w|os\.environ|dist\.\w|model\.\w|parser\.add_argument|args\.\w|print\(|"
    r"try:|except\b.*:\s*$|elif |else:|if .*:$|"
    # a call of a dotted name that takes the whole line: `jax.distributed.initialize(num_processes=
    # 8, process_id=pid)`, `mp.spawn(main, nprocs=4)` (a sentence has words around its calls)
    r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\([^()\n]*(?:\([^()\n]*\)[^()\n]*)*\)\s*(?:#.*)?$)"
)
_LOG = re.compile(
    r"^\s*(?:Traceback \(most recent|File \"|\w+(?:\.\w+)*(?:Error|Exception|Warning)\b|"
    r"\[?\d{4}-\d\d-\d\d[ T]\d\d:|\[rank\d+\]|\[\d+,\d+\]<|\w[\w.-]*:\d+:\d+ \[\d+\]|"
    r"(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b|[IWEF]\d{4} |\(\w*(?:pid|Worker)\w*[= ]|"
    r"\^+\s*$|\d+: |E\s+|torch\.\w+\.\w+Error|warnings\.warn|During handling|"
    r"The above exception|raise \w|" + PDSH_HOST + r": (?:\[rank\d+\]|"
    # a pdsh / DeepSpeed host prefix before a line of output ("node-2: [rank8]: ...")
    r"\[\d{4}-\d\d-\d\d|Traceback|\w+Error\b|\[\d+,\d+\]<|[\w.-]+:\d+:\d+ \[\d+\]|"
    # ... a traceback's frames and source lines under that prefix (review 70)
    r"\s+File \"|\s{3,}\S))|"
    r"NCCL (?:INFO|WARN)|Error|error:|\bfailed\b|Killed"
)
_YAML = re.compile(r"^\s*(?:- )?[\w.-]+:\s*(?:\S.*)?$")
_HEADING = re.compile(r"^#{1,6}\s+(?P<rest>\S.*)$")


def is_heading(line: str) -> bool:
    """A Markdown heading outside a fence (an issue's ``# title``, ``## Describe the bug``):
    prose, although ``# cmd`` is also a root prompt. A heading that holds a launch command
    or an assignment (``# torchrun ...``, ``# export X=1``) stays a command."""
    m = _HEADING.match(line)
    if not m:
        return False
    rest = m.group("rest")
    return not (_LAUNCH_LINE.match(rest) or _ENV.match(rest))


@dataclass(frozen=True)
class Segment:
    """A run of lines of one kind; ``first_line`` is 1-based in the pasted text."""

    kind: str
    text: str
    first_line: int

    def lines(self) -> list[tuple[int, str]]:
        """(line number, text) of every line."""
        return [(self.first_line + i, t) for i, t in enumerate(self.text.split("\n"))]


def _is_smi_row(line: str) -> bool:
    text = line.strip()
    return bool(_SMI.search(line)) or (
        text.startswith("|") and text.endswith("|") and len(text) > 20
    )


# a command's name and then words of CJK script: the writer's sentence (review 73)
_CJK_AFTER_COMMAND = re.compile(
    # (not a script of that name: "deepspeed 训练.py --num_gpus 2")
    r"^\s*\S+\s+[\u4e00-\u9fff\u3040-\u30ff\uac00-\ud7af]{2}(?!\S*\.(?:py|sh)\b)"
)


def classify_line(line: str, prev_kind: str | None) -> str:
    """The kind of one line outside a fence (``blank`` for an empty line)."""
    text = line.strip()
    if not text:
        return "blank"
    if _is_smi_row(line):
        return "smi"  # a table row of nvidia-smi / rocm-smi
    if _LAUNCH_LINE.match(line) and _CJK_AFTER_COMMAND.match(line):
        return "prose"  # "nvidia-smi 发现 2 号卡上还有一个进程": a sentence about the command
    if (
        _PROMPT.match(line)
        or _LAUNCH_LINE.match(line)
        or _SCRIPT_LINE.match(line)
        or _CAPTION.match(line)
    ):
        return "shell"
    if _ENV.match(line):
        return "env"
    if prev_kind == "log" and (line.startswith((" ", "\t")) or text.startswith("^")):
        return "log"  # source lines of a traceback, carets, continuation
    if _LOG.search(line):
        return "log"
    if _CODE.match(line):
        return "code"
    if prev_kind == "config" and _YAML.match(line):
        return "config"
    if prev_kind == "code" and line.startswith((" ", "\t")):
        return "code"
    return "prose"


def _fenced_kind(hint: str, body: list[str]) -> str:
    kind = _FENCE_KIND.get(hint.lower())
    if kind:
        return kind
    votes: dict[str, int] = {}
    prev: str | None = None
    for line in body[:200]:
        k = classify_line(line, prev)
        if k != "blank":
            votes[k] = votes.get(k, 0) + 1
            prev = k
    if not votes:
        return "log"
    if any(_DOLLAR_PROMPT.match(line) for line in body[:200]):
        # an unlabelled shell session ("$ env | grep VISIBLE" and its output): split like a
        # labelled one, so the commands and the env it prints are read as such (review 66)
        return "shell"
    if votes.get("smi", 0) * 3 >= sum(votes.values()):
        return "smi"
    if set(votes) == {"shell", "env"}:
        return "shell"  # `export X=1` then a launch line: a script (its exports are commands)
    best = max(votes, key=lambda k: votes[k])
    return "log" if best == "prose" else best  # unlabelled fences hold output, not prose


def split_document(text: str) -> list[Segment]:
    """The segments of a pasted document, in order."""
    lines = [_QUOTE.sub("", ln)[:MAX_LINE_CHARS] for ln in text.split("\n")[:MAX_LINES]]
    out: list[Segment] = []
    i = 0
    run_kind: str | None = None
    run: list[str] = []
    run_start = 1

    def flush() -> None:
        nonlocal run, run_kind
        if run_kind and any(x.strip() for x in run):
            out.append(Segment(run_kind, "\n".join(run).strip("\n"), run_start))
        run, run_kind = [], None

    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m:
            flush()
            fence = m.group(1)[:3]
            j = i + 1
            while j < len(lines) and not lines[j].lstrip().startswith(fence):
                j += 1
            body = lines[i + 1 : j]
            kind = _fenced_kind(m.group(2), body)
            out.extend(_split_fenced(kind, body, i + 2))
            i = j + 1
            continue
        kind = "prose" if is_heading(lines[i]) else classify_line(lines[i], run_kind)
        if kind != "blank" and run_kind == "shell" and run[-1].rstrip().endswith("\\"):
            kind = "shell"  # the continuation of a command line that ends in a backslash
        if kind == "blank":
            if run_kind:
                run.append(lines[i])
            i += 1
            continue
        if kind != run_kind:
            flush()
            run_kind, run_start = kind, i + 1
        run.append(lines[i])
        i += 1
    flush()
    return out


def _split_fenced(kind: str, body: list[str], first: int) -> list[Segment]:
    """A fenced block; a shell session is split into its command lines and their output."""
    if kind != "shell":
        text = "\n".join(body)
        return [Segment(kind, text, first)] if text.strip() else []
    out: list[Segment] = []
    continued = False  # the previous command line ended with a backslash
    for n, line in enumerate(body):
        is_cmd = (
            _PROMPT.match(line)
            or _LAUNCH_LINE.match(line)
            or _ENV.match(line)
            or _SCRIPT_LINE.match(line)
        )
        # a command's output is a log, or the table nvidia-smi / rocm-smi printed (review 17)
        k = "shell" if is_cmd or continued else "smi" if _is_smi_row(line) else "log"
        continued = k == "shell" and line.rstrip().endswith("\\")
        if not line.strip():
            continue
        if out and out[-1].kind == k:
            last = out[-1]
            out[-1] = Segment(k, last.text + "\n" + line, last.first_line)
        else:
            out.append(Segment(k, line, first + n))
    # a fenced "bash" block with no prompt at all is a script: every line is a command
    if all(s.kind == "log" for s in out) and out:
        return [Segment("shell", "\n".join(body), first)]
    return out


def shell_commands(seg: Segment) -> list[tuple[int, str, str]]:
    """(line, command, prompt) of every command of a shell segment: the prompt stripped (and
    kept: ``node1$``, ``user@host:~$``, "" without one), ``\\`` continuations joined."""
    cmds: list[tuple[int, str, str]] = []
    pending = ""
    start = seg.first_line
    prompt = ""
    for no, line in seg.lines():
        m = _PROMPT.match(line)
        caption = None if m else _CAPTION.match(line)
        body = m.group("cmd") if m else caption.group("cmd").strip() if caption else line.strip()
        body = body.lstrip("!+ ").strip()
        if not pending:
            start = no
            prompt = line[: m.start("cmd")].strip() if m else ""
        if body.endswith("\\"):
            pending += body[:-1] + " "
            continue
        full = (pending + body).strip()
        pending = ""
        if full:
            cmds.append((start, full, prompt))
    if pending.strip():
        cmds.append((start, pending.strip(), prompt))
    return cmds


def env_assignments(seg: Segment) -> dict[str, str]:
    """``KEY=value`` pairs of an env segment (``export``/``set`` accepted, quotes removed)."""
    out: dict[str, str] = {}
    for _, line in seg.lines():
        m = _ENV.match(line)
        if m:
            out[m.group("k")] = m.group("v").strip("'\"")
    return out


def env_sentences(seg: Segment) -> list[Segment]:
    """The reporter's words after an assignment's value (``export X=5，设置了…``), as prose."""
    out: list[Segment] = []
    for no, line in seg.lines():
        m = _ENV.match(line)
        if m and m.group("rest") and len(out) < 16:
            out.append(Segment("prose", m.group("rest").lstrip(_WIDE_PUNCT_CHARS), no))
    return out


# words that follow a launcher's name in a sentence, never in its command line: "torchrun in
# docker: …", "accelerate launch crashes on …", "deepspeed multi-node: …" (review 59: titles were
# simulated as launches)
_PROSE_WORDS = frozenset({
    "in", "on", "with", "and", "or", "is", "are", "was", "were", "crashes", "crash", "crashed",
    "fails", "fail", "failed", "hangs", "hang", "hung", "works", "work", "worked", "doesn't",
    "does", "do", "don't", "did", "didn't", "for", "the", "a", "an", "to", "but", "gives", "gave",
    "throws", "threw", "error", "errors", "issue", "problem", "not", "never", "always", "still",
    "only", "job", "jobs", "run", "runs", "ran", "keeps", "keep", "starts", "start", "started",
    "stuck", "freezes",
    # prepositions and verbs a title goes on with ("mpirun across two docker hosts -> ...")
    "across", "over", "between", "under", "inside", "within", "from", "at", "via", "vs", "versus",
    "without", "after", "before", "when", "while", "gets", "got", "reports", "says", "shows",
    "cannot", "can't", "won't", "launches", "launched", "spawns", "uses", "using", "ignores",
    "ignoring", "sees", "detects", "sometimes", "randomly", "->", "→", "=>", "+", "&",
})  # fmt: skip


# a quoted argument opens after a space or "=" (not the apostrophe of "won't ... it's")
_QUOTED_ARG = re.compile(r"(?:(?<=\s)|(?<==))(?:\"[^\"\n]*\"|'[^'\n]*')(?=\s|$)")


# the reporter's words after a script on its command line: "torchrun ... train.py on one box --
# it hangs", "srun python train.py (script takes ...)" (review 69): a script's own arguments are
# options, paths and values, not a run of words that starts with a preposition or a pronoun
WORDS_AFTER_SCRIPT = re.compile(
    r"\.(?:py|sh)\s+(?:--\s+)?(?=(?:\(\s*|(?:on|in|with|inside|across|but|and|it|so|then|which|"
    r"where|when|while|gives|fails|hangs|crashes|works|runs)\s+)[A-Za-z]+\s+[A-Za-z]+)"
)


def without_words_after(cmd: str) -> str:
    """The command of a shell line, without the reporter's words after its script."""
    m = WORDS_AFTER_SCRIPT.search(cmd)
    return cmd[: m.start() + 3].rstrip() if m else cmd


def reads_as_prose(cmd: str) -> bool:
    """Whether a line that starts with a launcher's name is a sentence about it: the word after
    the launcher (and its subcommand) is a word of prose or ends with a colon, or a word ends with
    a comma that a word follows ("--nproc_per_node=4, 4 GPUs, each rank …"). The reporter's words
    after the script (:func:`without_words_after`) are not read."""
    # (a quoted argument is the program's: `python -c "print(a, b)"` holds no sentence)
    words = _QUOTED_ARG.sub('""', without_words_after(cmd)).split()
    at = next((i for i, w in enumerate(words) if _LAUNCHER_NAME.search(w)), None)
    if at is None:
        return False
    rest = words[at + 1 :]
    if rest and rest[0] == "launch":
        rest = rest[1:]
    if rest and (rest[0].lower() in _PROSE_WORDS or rest[0].endswith(":")):
        return True
    return any(
        w.endswith(",") and nxt[:1].isalnum() for w, nxt in zip(rest, rest[1:], strict=False)
    )


_LAUNCHER_NAME = re.compile(
    r"^(?:\S*/)?(?:torchrun|accelerate|deepspeed|srun|mpirun|mpiexec|torch\.distributed\.(?:launch|run))$"
)
