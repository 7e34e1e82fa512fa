"""Read every segment of a pasted document with the engine made for it.

- every segment -> the signal catalogue (:mod:`rankmap.explain.catalogue`), per segment kind;
- ``code`` -> ``check``'s script analysis (:func:`rankmap.check.script_scan.scan_script`);
- ``shell`` -> launch command candidates (simulated later by ``check`` through the context);
- ``env`` -> environment assignments; ``smi`` -> :func:`rankmap.inventory.parse_machine_text`;
- ``config`` -> YAML/JSON (accelerate, DeepSpeed, Kubernetes keys).

The log segments are read by the line reader as before (:mod:`rankmap.explain.reader`); this
module adds what the rest of the paste says (commands: :mod:`~rankmap.explain.docread_shell`;
devices and configs: :mod:`~rankmap.explain.docread_devices`; the facts: :mod:`~rankmap.explain.docfacts`). Pure: text in, :class:`DocFacts` out; never raises
on any text (parsers' errors become "not read").
"""

from __future__ import annotations

import itertools
import re

from rankmap.explain import named
from rankmap.explain.catalogue import SIGNALS, Signal
from rankmap.explain.catalogue_zh import ZH_FAIL_KEYS
from rankmap.explain.code_order import cvd_after_cuda
from rankmap.explain.configs import read_text as read_config_lines
from rankmap.explain.denial import (
    MAX_NEGATED,
    asked_what_if,
    dismissed,
    negated,
    not_happened,
    other_failure_line,
    resolved_story,
    ruled_out,
    wanted,
    without_what_if_questions,
)
from rankmap.explain.docfacts import DocFacts, Hit
from rankmap.explain.docread_devices import read_config, read_smi, requested_devices
from rankmap.explain.docread_shell import (
    NODES_OPTION,
    read_container_runs,
    read_prose_commands,
    read_prose_launches,
    read_sbatch,
    read_shell,
    shell_caption,
    shell_sentences,
    with_sbatch,
)
from rankmap.explain.document import (
    Segment,
    env_assignments,
    env_sentences,
    is_heading,
    split_document,
)
from rankmap.explain.printed_lists import rank_devices, rank_lists
from rankmap.explain.signal_model import PROSE
from rankmap.explain.versions import versions_in
from rankmap.numbers import saturating_int

DOC_LIMIT = 4 * 1024 * 1024  # bigger inputs are read by the line reader only
# (A10G, L40S and the one-digit T4 / L4 are cloud instances' usual GPUs: "g5.12xlarge (4x A10G)")
_GPU_MODEL = (
    r"(?:(?:RTX|GTX|Tesla|Quadro)\s?[A-Z]?\d{3,4}(?:\s?Ti)?|[AHVLB]\d{2,3}[GS]?|[TL]4|P100|P40|"
    r"K80|MI\d{3}X?)"
)
_GPU_COUNT = re.compile(
    # "2 GPUs", "8x A100 GPUs", or the compound "a 4-GPU machine" (not "one GPU": "only one GPU is
    # used" is a symptom, not the machine's count)
    # (a model word needs a space or an "x" before it: "3 V100 32G GPUs" is 3 GPUs of 32 GB)
    r"\b(?P<n>\d{1,2}|one|two|three|four|eight)(?:(?:(?:\s*x\s*|\s+)(?:[A-Z]\w*\s+)?|\s*)"
    r"(?:gpus|cards)|"
    r"-(?:gpus?|cards?)|"
    # "2x RTX 3090", "4 x A100", "2 A100s", "eight H100s": a count of a GPU model
    r"\s*x\s*(?:NVIDIA\s+)?(?:GeForce\s+)?"
    + _GPU_MODEL
    + r"|\s+(?:NVIDIA\s+)?"
    + _GPU_MODEL
    + r"s)\b",
    re.I,
)
# Substrings (lowercase) of a text that reports a failure; a gate for best guesses only. The
# strong ones say something failed; the weak ones also phrase a question about a setup that works
# ("instead of running it on the host", "is there an issue with ...").
STRONG_FAIL_KEYS = (
    "traceback", "error", "exception", "fail", "crash", " hang", "stuck", "does not work",
    "doesn't work", "not working", "unable to", "wrong", " bug", "[bug", "broke",
)  # fmt: skip
WEAK_FAIL_KEYS = (
    "can't", "cannot", "fix", "issue", "instead of", "even though", "expected behav", "only use",
    "waste", "bottleneck", "busy", "solved", "unbalanced", "higher than", "not respect",
    "not being", "despite", "ignor", "unexpected", "problem", "doesn't", "does not", "isn't",
    "no longer",
)  # fmt: skip
# The writer says the setup works ("Each works", "all three answer requests", "runs fine"): weak
# failure words are then a question's, not a failure's (review 36)
_WORKS = re.compile(
    r"\b(?:each|all|both|everything|it|they|this)(?: \w+){0,3} (?:works?|answers?|runs? fine|"
    r"is fine|are fine)\b|\bworks? (?:fine|well|correctly|as expected)\b|\bruns? (?:fine|well|"
    r"correctly)\b|\bno errors?\b"
)


MAX_PROSE_SPANS = 4096  # prose segments whose lines are remembered (a paste has a few dozen)
TITLE_LINES = 8  # a title is a heading among the paste's first lines


def _title_line(text: str) -> int | None:
    """The 1-based line of the paste's title: its first Markdown heading, if near the top and
    before any fence (a ``# comment`` in a fenced script or shell session is no title)."""
    for no, line in enumerate(text.split("\n", TITLE_LINES)[:TITLE_LINES], start=1):
        if line.lstrip().startswith(("```", "~~~")):
            return None
        if is_heading(line):
            return no
    return None


# Inline code in a sentence: `...` spans long enough to hold a call or an expression.
_INLINE_CODE = re.compile(r"`([^`\n]{4,300})`")
MAX_INLINE_SPANS = 200  # spans read per prose segment


# A span the sentence warns against or replaces is not what the writer runs: "never write `x`",
# "a common mistake is `x`", "use `y` instead of `x`", "`x` is an anti-pattern" (advice, docs).
_ADVICE_BEFORE = re.compile(
    r"(?:\b(?:never|avoid\w*|instead of|rather than|mistakes?|pitfalls?|anti-?patterns?|"
    r"bad (?:practice|idea)|wrong way|do not|don't|should not|shouldn't|must not|mustn't)\b)"
    r"[^.!?\n`]{0,40}$",
    re.IGNORECASE,
)
_ADVICE_AFTER = re.compile(
    r"^[^.!?\n`]{0,20}\b(?:is|are) (?:an? )?(?:common |typical |classic )?(?:mistake|pitfall|"
    r"anti-?pattern|bad (?:practice|idea))",
    re.IGNORECASE,
)


# ... or one it proposes as the fix ("Instead, we can move them with `x`", "it should be `x`",
# "replace it with `x`", "a workaround is `x`"): what the writer would run, not what failed.
# (review 25: "we can reproduce it with", "as suggested" and "should use X, but my code calls"
# introduce what runs; only words that replace it count)
_PROPOSED_BEFORE = re.compile(
    r"\binstead\b(?! of)[^.!?\n`]{0,80}$|"
    r"(?:\bshould (?:be|read)\b|\breplac\w* [^.!?\n`]{0,40}\bwith\b|"
    r"\bfix(?:ed)? (?:it |this )?(?:by|with)\b|\bworkaround (?:is|was)\b)[^.!?\n`,]{0,60}$",
    re.IGNORECASE,
)


def _advised_against(text: str, start: int, end: int) -> bool:
    before = text[max(0, start - 100) : start]
    return bool(
        _ADVICE_BEFORE.search(before)
        or _PROPOSED_BEFORE.search(before)
        or _ADVICE_AFTER.match(text[end : end + 60])
    )


def inline_code(seg: Segment) -> Segment | None:
    """The inline code spans of a prose segment as one code segment (None: there are none),
    each span on the line of its sentence, so that a hit quotes the right line."""
    by_line: dict[int, list[str]] = {}
    for n, m in enumerate(_INLINE_CODE.finditer(seg.text)):
        if n >= MAX_INLINE_SPANS:
            break
        if _advised_against(seg.text, m.start(), m.end()):
            continue
        by_line.setdefault(seg.text.count("\n", 0, m.start()), []).append(m.group(1))
    if not by_line:
        return None
    lines = ["; ".join(by_line.get(i, ())) for i in range(max(by_line) + 1)]
    return Segment("code", "\n".join(lines), seg.first_line)


# Failure words the writer denies ("we saw no error so far", "runs without any errors").
_DENIED_FAILURE = re.compile(
    r"\b(?:no|without(?: any)?|never (?:had|saw|got|hit)(?: an?| any)?|zero|not a single) "
    r"(?:errors?|exceptions?|failures?|crash(?:es)?|issues?|problems?|hangs?)\b|"
    # "nothing has failed yet", "it has not crashed", and the noun "error handling"
    r"\bnothing (?:has |have )?(?:failed|crashed|broken|broke)\b|"
    r"\b(?:has|have|did|does)(?: not|n't) (?:fail|failed|crash|crashed)\b|\berror[- ]handling\b|"
    # "Not a bug report, just a question" (review 36)
    r"\b(?:not|isn't|is not) (?:a|really a) bug(?: report)?\b"
)


def _failed(text: str) -> bool:
    low = _DENIED_FAILURE.sub(" ", without_what_if_questions(text[:DOC_LIMIT]).lower())
    if any(k in low for k in STRONG_FAIL_KEYS) or any(k in low for k in ZH_FAIL_KEYS):
        return True
    return any(k in low for k in WEAK_FAIL_KEYS) and not _WORKS.search(low)


def _ranks(seg: Segment, facts: DocFacts) -> None:
    """What the prose says of ranks: every rank it names and "both processes"
    (:mod:`rankmap.explain.named`, the one reader of rank spellings; ranks on failure lines
    are read over the whole input by the engine)."""
    lines = [line for _, line in seg.lines()[:5000]]
    if seg.kind == "prose":
        facts.prose_ranks |= named.stated_ranks(lines, named.MAX_RANKS - len(facts.prose_ranks))
    if not facts.pair_named:
        facts.pair_named = named.pair_named(lines)


# NCCL >= 2.19's ``comm 0x.. rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 MNNVL 0``
_LOCAL_RANKS = re.compile(r"\blocalRanks (\d{1,6})\b")
_CVD_SPELLED = re.compile(r"\bCUDA_VISIBLE_DEVICES\s*[=:]|['\"]CUDA_VISIBLE_DEVICES['\"]\s*\]\s*=")
# every list the text sets, in any segment (a sentence that tells an export, a shell line, code:
# `os.environ["CUDA_VISIBLE_DEVICES"] = "5"`)
_CVD_VALUE = re.compile(
    r"\bCUDA_VISIBLE_DEVICES(?:['\"]\s*\])?\s*=\s*['\"]?(\d{1,3}(?:\s*,\s*\d{1,3}){0,63})\b"
)
MAX_VISIBLE_LISTS = 16
_ROCR_HIP = re.compile(
    r"ROCR_VISIBLE_DEVICES=[^\n]*(?:\n[^\n]*){0,3}?HIP_VISIBLE_DEVICES=|"
    r"HIP_VISIBLE_DEVICES=[^\n]*(?:\n[^\n]*){0,3}?ROCR_VISIBLE_DEVICES="
)
# DeepSpeed's MPI discovery counts a rank's local rank among the ranks of its host name
# (deepspeed/comm/comm.py mpi_discovery: "assuming hostnames are unique")
_MPI_DISCOVERED = re.compile(
    r"Discovered MPI settings of world_rank=\d{1,6}, local_rank=(\d{1,6}), world_size=(\d{1,6})"
)
# "a single 4 GPU machine", "one node", "on 1 server" (not "a single GPU", not "one node of 8")
_ONE_MACHINE = re.compile(
    r"\b(?:a single|single|one|1|the same)(?: \d+[- ]?(?:x[- ]?)?(?:gpus?|cards?))? "
    r"(?:machine|node|server|host|box|workstation)\b(?! (?:of|in|out of|per)\b)",
    re.IGNORECASE,
)
_NCCL_NODES = re.compile(r"\bnRanks \d{1,6} nNodes (\d{1,6})\b")
_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "eight": 8}
# NCCL's Init line: "cudaDev 0 nvmlDev 2" (the process's index, NVML's = nvidia-smi's)
_NVML_DEV = re.compile(r"\bcudaDev \d+ nvmlDev (\d{1,4})\b")
# XLA / TensorFlow: "Invalid device ordinal value (4). Valid range is [0, 3]." — the process saw
# k + 1 devices (its visible list)
_VALID_RANGE = re.compile(r"Valid range is \[0, ?(\d{1,4})\]")
# "2 machines", "two physical nodes", "4 servers": the machines of the job, as the prose counts
_MACHINES = re.compile(
    r"\b(?P<n>[2-9]|[1-9]\d|two|three|four|eight) (?:\w+ )?(?:machines|nodes|hosts|servers|boxes)\b",
    re.IGNORECASE,
)


# The processes per node the prose states: "8 processes", "--nproc_per_node 4", "-np 16"
# (review 27: "torchrun --nproc_per_node 4 on a machine with 2 GPUs" was not compared)
_PROC_COUNT = re.compile(
    r"(?:(?:--)?nproc[-_]per[-_]node|--num[-_]processes|--num[-_]gpus|(?<![\w-])-np?)[= ]\s*"
    r"(?P<n>\d{1,3})\b|"
    r"\b(?P<m>\d{1,3}) (?:processes|procs|proc+esses|ranks|workers)\b|"
    r"(?P<z>\d{1,3})\s*个(?:进程|process)",  # 8个进程
    re.IGNORECASE,
)
# A GPU count in Chinese: 8张卡, 两块A100, 单机8卡 (not 第一张卡 "the first card", not 只用了一张卡
# "only one card is used": a symptom, as in English)
_GPU_COUNT_ZH = re.compile(
    # (not after 第 "the n-th", nor after a verb of use: 只用一张卡 / 用了两张卡 tell use, not the
    # machine's count; review 38)
    r"(?<![第了用跑只仅])(?P<n>\d{1,2}|一|两|二|三|四|六|八)\s*(?:张|块)\s*(?:(?:[A-Za-z]+\s*\d*\s*)?"
    r"(?:卡|显卡|gpu)|(?:[A-Za-z]+\s*)?\d{2,4}[A-Za-z]*\b)",  # 两块卡, 8张A100, 两块 4090
    re.IGNORECASE,
)
# "4卡训练" (4-card training), "单机8卡": the count a job is meant for, read only where the paste
# states no machine's count (the English compound "4-GPU" reads either way)
# (卡住 / 卡死 / 卡在 is "stuck": "epoch 2 卡住了" is no count; review 38)
_GPU_COUNT_ZH_BARE = re.compile(r"(?<![\d号第])(?P<n>\d{1,2})卡(?![号住死顿在了着])")
_ZH_NUMBERS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "六": 6, "八": 8}


# AMD's MI250 and MI250X hold two graphics compute dies (GCDs), each its own device to ROCm and
# PyTorch: "4x MI250X" is 8 devices (AMD Instinct MI250X documentation; review 62), and a stated
# "(8 GCDs)" is the count
_DUAL_DIE = re.compile(r"MI250X?\b", re.I)
_GCDS = re.compile(r"\b(\d{1,3})\s*GCDs?\b", re.I)


def _devices_of(count: int, m: re.Match[str], line: str) -> int:
    """The devices a stated GPU count makes: GCDs where the line counts them or the model has
    two per package."""
    if g := _GCDS.search(line):
        return int(g.group(1))
    return count * 2 if _DUAL_DIE.search(m.group(0)) else count


def _stated_gpus(seg: Segment, source: str, facts: DocFacts) -> None:
    """The first GPU count the reporter's prose states, and the line that states it."""
    for no, line in seg.lines():
        m = _GPU_COUNT.search(line)
        if m:
            n = m.group("n").lower()
            facts.stated_gpus = _devices_of(_WORDS[n] if n in _WORDS else int(n), m, line)
            facts.stated_gpus_at = f"{source}:{no}: {line.strip()[:160]}"
            return
        z = _GPU_COUNT_ZH.search(line)
        if z:
            facts.stated_gpus = _ZH_NUMBERS.get(z.group("n")) or int(z.group("n"))
            facts.stated_gpus_at = f"{source}:{no}: {line.strip()[:160]}"
            return
        bare = _GPU_COUNT_ZH_BARE.search(line)
        if bare and facts.job_gpus is None:
            facts.job_gpus = (int(bare.group("n")), f"{source}:{no}: {line.strip()[:160]}")


# A question may quote a message on a line of its own (read as output): up to this many lines of
# output are still a question's quotes, not a run's output
MAX_QUOTED_LOG = 2


def read_document(text: str, source: str = "<stdin>") -> DocFacts:
    """Segment ``text`` and read each segment; bounded by :data:`DOC_LIMIT`."""
    text = without_template(text[:DOC_LIMIT])
    facts = DocFacts(versions=versions_in(text))
    read_config_lines(text, facts.configs)
    requested_devices(text, facts)
    facts.local_ranks = max(map(int, _LOCAL_RANKS.findall(text)), default=0)
    facts.cvd_spelled = _CVD_SPELLED.search(text) is not None
    values = itertools.islice(_CVD_VALUE.finditer(text), MAX_VISIBLE_LISTS)
    facts.visible_lists = [v.group(1).replace(" ", "") for v in values]
    facts.cvd_after_cuda = cvd_after_cuda(text, source)
    facts.rocr_hip_together = _ROCR_HIP.search(text) is not None
    facts.mpi_local = max(
        ((int(a), int(b)) for a, b in _MPI_DISCOVERED.findall(text)), default=(0, 0)
    )
    facts.nccl_nodes = min(map(int, _NCCL_NODES.findall(text)), default=0)
    facts.nccl_nvml = {saturating_int(n) for n in _NVML_DEV.findall(text)}
    facts.visible_range = max(
        (saturating_int(k) + 1 for k in _VALID_RANGE.findall(text)), default=0
    )
    facts.title_line = _title_line(text)
    facts.names_gpus = _GPU_WORDS.search(text) is not None
    if "VISIBLE_DEVICES" in text:
        facts.rank_lists = rank_lists(text)
    facts.rank_devices = rank_devices(text)
    caption = ""  # the prose line just before a shell block that names its machine
    prose: list[str] = []
    for seg in split_document(text):
        facts.segments[seg.kind] += 1
        if seg.kind == "log":
            facts.log_lines += seg.text.count("\n") + 1
        if seg.kind == "prose" and len(prose) < MAX_PROSE_SPANS:
            prose.append(seg.text)
        if seg.kind == "prose" and not facts.described:
            facts.described = any(_own_sentence(line) for line in seg.text.splitlines()[:200])
        if seg.kind == "prose" and len(facts.prose_spans) < MAX_PROSE_SPANS:
            facts.prose_spans.append((seg.first_line, seg.first_line + seg.text.count("\n")))
        _signals(seg, source, facts)
        if seg.kind == "prose" and (spans := inline_code(seg)) is not None:
            _signals(spans, source, facts)  # `cuda:{dist.get_rank()}` quoted in a sentence
        if seg.kind in ("log", "prose"):
            _ranks(seg, facts)
        if seg.kind == "prose":
            facts.smi_told |= _smi_told(seg.text)
        if seg.kind != "code" and "run" in seg.text:
            read_container_runs(seg, facts)
        if seg.kind in ("shell", "log") and "#SBATCH" in seg.text:
            read_sbatch(seg, facts)
        if seg.kind == "shell":
            read_shell(seg, facts, caption)
            for tail in shell_sentences(seg):  # "horovodrun -np 4 … on a T4 box. I left out …"
                _signals(tail, source, facts)
                facts.smi_told |= _smi_told(tail.text)
        elif seg.kind == "env":
            facts.env.update(env_assignments(seg))
            for tail in env_sentences(seg):  # "export CUDA_VISIBLE_DEVICES=5，设置了…"
                _signals(tail, source, facts)
        elif seg.kind == "code":
            _code(seg, facts)
        elif seg.kind == "smi":
            read_smi(seg, source, facts)
        elif seg.kind == "config":
            read_config(seg, facts)
        elif seg.kind in ("prose", "log") and "VISIBLE_DEVICES=" in seg.text:
            read_prose_commands(seg, facts)
        if seg.kind == "prose":
            read_prose_launches(seg, facts)
        if seg.kind in ("prose", "shell") and facts.stated_gpus is None:
            _stated_gpus(seg, source, facts)  # (a launch line may end in a sentence)
        if seg.kind in ("prose", "shell") and facts.stated_procs is None:
            m = _PROC_COUNT.search(seg.text)
            facts.stated_procs = int(m.group("n") or m.group("m") or m.group("z")) if m else None
        if seg.kind == "prose" and (
            nm := NODES_OPTION.search(seg.text)
        ):  # "torchrun --nnodes=2 ..."
            facts.hosts_in_launch = max(facts.hosts_in_launch, saturating_int(nm.group("n")))
        if seg.kind == "prose" and (mm := _MACHINES.search(seg.text)):
            n = mm.group("n").lower()
            facts.stated_machines = max(facts.stated_machines, _WORDS.get(n) or saturating_int(n))
        if seg.kind == "prose" and _ONE_MACHINE.search(seg.text):
            facts.one_machine = True
        caption = shell_caption(seg)
    if facts.spread and not (facts.shared_gpu or facts.gpu0_extra):
        # the process table shows the ranks spread over their GPUs: prose about processes on
        # GPU 0 ("an extra process on GPU 0": a display server, another user's job) names no
        # pile-up of this job (review 62)
        facts.hits.pop("all-on-gpu0", None)
    if _list_seen_applied(facts):
        # the process table shows the job on the GPUs its list names: the list applied,
        # whatever the prose says of it ("ignores CUDA_VISIBLE_DEVICES and uses GPU 0", read
        # from a cuda:0 that is the list's first GPU; review 62)
        # ... and a "wrong GPU" report beside it is the renumbering: cuda:0 inside the process is
        # the list's first GPU (review 66)
        for sid in ("cvd-ignored", "gpu0-named-used", "device-selection-problem"):
            facts.hits.pop(sid, None)
    hit = facts.hits.get("rank-as-device-code")
    if (
        hit
        and facts.code_kind == "local_rank"
        and facts.code_call
        and facts.code_call in hit.excerpt
    ):
        # the script analysis followed the name to the local rank (`--local_rank` with
        # `dest='rank'`): `set_device(args.rank)` is no global rank (b24 dev)
        facts.hits.pop("rank-as-device-code")
    facts.failed = _failed(text)  # the whole document: "Each works" answers a later "instead of"
    # a question about a failure the writer has not had, with no output of a run: no failure
    facts.hypothetical = facts.log_lines <= MAX_QUOTED_LOG and not_happened(
        text, failed=facts.failed
    )
    facts.failed = facts.failed and not facts.hypothetical
    facts.resolved = resolved_story("\n".join(prose))
    # told in the title (the first line): the whole post is the story of a failure that is over
    first = next((line for line in text.split("\n", 8)[:8] if line.strip()), "")
    facts.resolved_in_title = bool(facts.resolved) and (facts.resolved or "") in first
    if facts.resolved:
        facts.resolved_until = other_failure_line(text, facts.resolved)
    if facts.stated_gpus is None and facts.job_gpus is not None:
        facts.stated_gpus, facts.stated_gpus_at = facts.job_gpus
    if _lists_every_gpu(facts):  # an environment dump of a job that sees the whole machine
        facts.cvd_whole_machine = True
        for sid in ("cvd-assigned", "cvd-mentioned"):
            facts.hits.pop(sid, None)
    if facts.launch and facts.sbatch:
        facts.launch = with_sbatch(facts.launch, facts.sbatch)
    return facts


def _list_seen_applied(facts: DocFacts) -> bool:
    """Whether an nvidia-smi process table, or NCCL's Init lines (``nvmlDev``: the NVML index,
    nvidia-smi's numbering), show the job only on GPUs the paste's CUDA_VISIBLE_DEVICES names."""
    listed = [e for e in facts.cvd_entries() if e]
    # NCCL's lines are the job's own ranks; a process table may show other users' jobs too
    seen = facts.nccl_nvml or facts.proc_gpus or facts.smi_told
    if not seen or not listed or not all(e.isdecimal() for e in listed):
        return False
    return seen <= {saturating_int(e) for e in listed}


# the GPUs nvidia-smi is said to show in use: "nvidia-smi shows the load on GPU 2 and GPU 3"
# (review 69), "in nvidia-smi, GPUs 4,5 are busy"
_SMI_TOLD = re.compile(
    r"nvidia-smi\b[^.\n]{0,60}?\b(?:on|in|using|uses)\s+(?:the\s+)?GPUs?\s*#?"
    r"(?P<ids>\d(?:\s*(?:,|and|&)\s*(?:GPU\s*#?)?\d)*)\b(?!\s*(?:-|to)\s*\d)",
    re.IGNORECASE,
)


def _smi_told(text: str) -> set[int]:
    """The GPU indices the reporter says nvidia-smi shows busy (not "no process on GPU 2")."""
    return {
        int(d)
        for m in _SMI_TOLD.finditer(text[:DOC_LIMIT])
        if not _SMI_TOLD_NOT.search(text, m.start(), min(len(text), m.end() + 30))
        for d in re.findall(r"\d", m["ids"])
    }


_SMI_TOLD_NOT = re.compile(r"\b(?:no|not|nothing|none|idle|empty|free|unused)\b", re.I)


def _lists_every_gpu(facts: DocFacts) -> bool:
    """Whether the pasted CUDA_VISIBLE_DEVICES is ``0,1,…,N-1`` for the N GPUs the machine is
    said (or shown) to have: every GPU visible, in CUDA's order — no narrowing (review 40)."""
    gpus = facts.smi_gpus or facts.stated_gpus
    return bool(gpus) and facts.cvd_entries() == [str(i) for i in range(gpus or 0)]


_PLACEHOLDER = re.compile(r"^[ \t>#*-]*[^\n]{0,80}\(e\.g\.?,?[^)\n]{0,80}\)\s*:?[ \t]*$", re.M)
# A checklist item of the template that asks on a condition ("2. If your question is about hang,
# did you read this doc?"): it names what *might* apply to any report
_CHECKLIST = re.compile(
    r"^[ \t>*-]*(?:\d+\.[ \t]*)?(?:\[[ xX]?\][ \t]*)?(?:if|when) your (?:question|issue|problem|"
    r"bug|report|request)\b[^\n]{0,120}\b(?:did you|have you|please)\b[^\n]*$",
    re.M | re.I,
)


def without_template(text: str) -> str:
    """The paste without an issue template's text: HTML comments (``<!-- … -->``), placeholder
    lines left unanswered (``- PyTorch Version (e.g., 1.10):``) and conditional checklist items
    (``If your question is about docker, did you read ...``). Line numbers kept."""
    parts: list[str] = []
    pos = 0
    while (start := text.find("<!--", pos)) != -1:
        end = text.find("-->", start + 4)
        if end == -1:
            break
        parts += [text[pos:start], "\n" * text.count("\n", start, end)]
        pos = end + 3
    parts.append(text[pos:])
    return _CHECKLIST.sub("", _PLACEHOLDER.sub("", "".join(parts)))


# GPUs and their stacks named at all: the family's subject (a failure without them is anyone's)
_GPU_WORDS = re.compile(
    r"\b(?:gpus?|cuda\w*|nccl|rccl|rocm|nvidia\w*|multi-?gpu|vram)\b|(?-i:\bHIP|\bNPUs?\b)|"
    r"显卡|多卡|单卡|\d卡",
    re.IGNORECASE,
)
# A line that quotes a message or is a thread's metadata ("owner/repo · issue #3 · closed"), not
# a sentence of the writer's: an exception or error name, a failure message's words.
_MESSAGE_LINE = re.compile(r"[A-Za-z](?:Error|Exception)\b|\bordinal\b|\berror\s*[:=(]| · ", re.I)


def _own_sentence(line: str) -> bool:
    """A sentence of the writer's own: four words or more, no quoted message in it."""
    return len(line.split()) >= 4 and not _MESSAGE_LINE.search(line)


def _signals(seg: Segment, source: str, facts: DocFacts) -> None:
    if (
        seg.kind == "prose" and "`" in seg.text
    ):  # inline code marks: "`RANK` instead of `LOCAL_RANK`"
        seg = Segment(seg.kind, seg.text.replace("`", ""), seg.first_line)
    original = seg
    if seg.kind == "prose":  # a sentence hard-wrapped over lines is read as one line
        seg = Segment(seg.kind, unwrapped(seg.text), seg.first_line)
    lowered = seg.text.lower()
    exact = len(lowered) == len(seg.text)  # positions agree (no length-changing case folding)
    head = _prose_head(seg, lowered, facts)
    for sig in SIGNALS:
        if seg.kind not in sig.where and not (seg.kind == "smi" and "log" in sig.where):
            continue
        if exact and sig.keys and not any(k in lowered for k in sig.keys):
            continue  # none of its keys: no match (the prose head is a part of the segment)
        if sig.where == PROSE and head is not None:
            if not head[0].text:
                continue  # the document's prose budget is spent
            m = _first_affirmed(sig, head[0], head[1], exact)
        else:
            m = _first_affirmed(sig, seg, lowered, exact)
        if not m:
            continue
        facts.counts[sig.id] += 1
        if sig.framework and sig.framework not in facts.frameworks:
            facts.frameworks.append(sig.framework)
        if sig.id in facts.hits:
            continue
        text = original.text  # the same length: line numbers and the quote from the paste
        line_no = seg.first_line + text.count("\n", 0, m.start())
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.start())
        line = text[start : end if end != -1 else len(text)].strip()
        facts.hits[sig.id] = Hit(sig, seg.kind, f"{source}:{line_no}", line[:240])


MAX_KEY_LINES = 1000  # lines tried per key and segment: bounded time on adversarial input
# Signals of prose alone (sentence-level co-occurrences, the costliest regexes) read the first
# 64 KiB of the document's prose: what a GitHub issue body holds at most (65,536 characters),
# and a bound on their time for a paste of megabytes of prose, however many segments the prose
# is cut into (prose lines between code-like lines are many short segments).
PROSE_SIGNAL_LIMIT = 64 * 1024


# A line break inside a sentence: a line of running text (40 characters or more, no sentence
# mark at its end) and the next line going on in lower case at the margin (or with inline code);
# indented lines are records or code, not a sentence's continuation.
_SOFT_WRAP = re.compile(r"(?m)^([^\n]{39,}[^\s.!?:;|])\n(?=[a-z`(\"'])")


def unwrapped(text: str) -> str:
    """``text`` with the line breaks inside its sentences turned into spaces (same length)."""
    return _SOFT_WRAP.sub(lambda m: m.group(1) + " ", text)


def _prose_head(seg: Segment, lowered: str, facts: DocFacts) -> tuple[Segment, str] | None:
    """What the prose-only signals read of a prose segment (None: the whole): what is left of
    the document's PROSE_SIGNAL_LIMIT characters."""
    if seg.kind != "prose":
        return None
    cut = max(0, PROSE_SIGNAL_LIMIT - facts.prose_read)
    facts.prose_read += min(cut, len(seg.text))
    if len(seg.text) <= cut:
        return None
    return Segment(seg.kind, seg.text[:cut], seg.first_line), lowered[:cut]


def _first_affirmed(sig: Signal, seg: Segment, lowered: str, exact: bool) -> re.Match[str] | None:
    """The signal's first match in the segment; in prose, negated matches are skipped (and in
    shell lines, which carry a sentence after the command: "torchrun ... train.py. It is not the
    case that all processes are on GPU 0")."""
    pos = 0
    for _ in range(MAX_NEGATED + 1):
        m = _search(sig, seg.text, lowered, pos) if exact else sig.pattern.search(seg.text, pos)
        if m is None:
            return m
        if seg.kind == "log":  # a sentence typed among log lines ("no MIG here. NCCL error: ...")
            if not (sig.negatable and negated(seg.text, m.start(), m.end())):
                return m
        elif seg.kind not in ("prose", "shell") or not _unsaid(sig, seg.text, m):
            return m
        pos = max(m.end(), m.start() + 1)
    return None


def _unsaid(sig: Signal, text: str, m: re.Match[str]) -> bool:
    """Whether the prose around a match takes it back: a state the writer wants, a failure
    outside the family they rule out, a setting they deny."""
    if wanted(text, m.end()):
        return True
    if sig.outside and dismissed(text, m.start(), m.end()):
        return True
    if sig.failure and asked_what_if(text, m.start(), m.end()):
        return True  # "Would that fail?": asked, not reported (review 41)
    # a setting denied ("not using docker"), or a symptom ruled out ("it's not the "all on GPU
    # 0" problem", review 49)
    if sig.negatable:
        return negated(text, m.start(), m.end())
    return sig.failure and ruled_out(text, m.start())


def _search(sig: Signal, text: str, lowered: str, pos: int = 0) -> re.Match[str] | None:
    """The signal's first match at or after ``pos``, trying its regex only on the lines that
    hold one of its keys."""
    if not sig.keys:
        return sig.pattern.search(text, pos)
    best: re.Match[str] | None = None
    for key in sig.keys:
        i = lowered.find(key, pos)
        tries = 0
        while i != -1 and tries < MAX_KEY_LINES and (best is None or i < best.start()):
            tries += 1
            start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            end = len(text) if end == -1 else end
            m = sig.pattern.search(text, max(start, i - 2048, pos), min(end, i + 2048))
            if m:
                best = m if best is None or m.start() < best.start() else best
                break
            i = lowered.find(key, end)
        if i != -1 and tries >= MAX_KEY_LINES:  # a very common key: one plain pass of the rest
            m = sig.pattern.search(text, i)
            if m and (best is None or m.start() < best.start()):
                best = m
    return best


# Lightning's processes per node: ``Trainer(..., devices=4)`` / ``Fabric(devices=4)``.
_LIGHTNING_DEVICES = re.compile(r"\b(?:Trainer|Fabric)\([^)]{0,300}?\bdevices\s*=\s*(\d{1,3})\b")


def _code(seg: Segment, facts: DocFacts) -> None:
    from rankmap.check.script_scan import scan_script

    m = _LIGHTNING_DEVICES.search(seg.text)
    if m and facts.lightning_devices is None:
        facts.lightning_devices = int(m.group(1))

    try:
        sel = scan_script(seg.text, path="<pasted code>")
    except Exception:  # noqa: BLE001 - a pasted snippet never breaks explain
        return
    if sel.parse_error:
        return
    # the pasted code starts its own workers on every start (the condition check's engine uses,
    # check/engine.py _spawn_in_every_process: unguarded, the workers select by the spawn index)
    if sel.spawn_always and not sel.spawn_sets_local_rank and "mp.spawn index" in sel.origin:
        facts.code_spawns = True
        facts.spawn_count = facts.spawn_count or sel.spawn_count
    rank = {"global_rank": 4, "constant": 3, "local_rank_modulo": 2, "local_rank": 1}
    if (
        rank.get(sel.kind, 0) > rank.get(facts.code_kind or "", 0)
        or facts.code_kind is None
        and sel.kind in ("none", "accelerate")
    ):
        facts.code_kind, facts.code_call = sel.kind, sel.call
