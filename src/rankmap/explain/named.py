"""The ranks and GPUs a text names, in every spelling the field prints them.

Devices (canonical through :mod:`rankmap.pci`, so one GPU is one id whatever the spelling):
``0000:4f:00.0`` (lspci/sysfs), ``00000000:4F:00.0`` (nvidia-smi, NVML), ``4F:00.0`` after a
``Bus-Id``/``bus id``/``pci`` word, NCCL's packed hex after ``busId`` (``4f000``,
reference/nccl.md (a); the duplicate WARN's ``CUDA device 4f000`` is read by the WARN's own
recogniser), the decimal ``pci_bus_id=79, pci_device_id=0, pci_domain_id=0`` of
``torch.cuda.get_device_properties`` (``0000:4F:00.0``), and GPU/MIG UUIDs (also the old
``MIG-GPU-<uuid>/1/0`` form, one device).

Ranks (:data:`RANK_FORMS`): ``[rank3]:`` (PyTorch), ``[Rank 3]``, ``Rank 3:``, ``Rank 1/8``,
``rank 3``, ``rank3``, ``rank=3`` (also inside Ray/vLLM prefixes ``(pid=12, rank=3)``),
``rank: 3``, ``global rank 3``, ``GLOBAL_RANK: 3``, ``local_rank 3``, ``LOCAL_RANK=3``,
``--local_rank=3``, lists and ranges (``ranks 0 and 4``, ``ranks 0, 1``, ``ranks [0, 1]``,
``ranks 0-7``), Open MPI's ``[1,3]<stderr>:`` and a line-leading ``[3]:`` (reference/launchers.md),
torchrun's default ``--tee`` prefix ``[default3]:`` (``[${role_name}${local_rank}]:``, role
``default``: PyTorch's torch.distributed.elastic agent docs) and ``torch.multiprocessing.spawn``'s
``process 3 terminated with …`` (the spawn index, passed to the worker as its rank), vLLM's
worker prefix ``(Worker_TP3 pid=…)`` / ``(Worker_PP0_TP3 pid=…)`` (the tensor-parallel rank,
the worker's rank in the first pipeline stage; other stages name no rank alone). A local rank
is read as the rank: the text names no other. Counters (``nranks``, ``localRanks``) and the
ranks of nodes (``node rank``, ``node_rank``, ``group rank``, ``machine rank``) are no ranks.

Which ranks a finding takes (:func:`failing_ranks`, then :func:`stated_ranks` of the prose,
:func:`pair_named`, :func:`intra_host_ranks`; engine.py combines them): the ranks that lines
reporting a failure name; else those the reporter's prose names ("extra memory on rank 0");
"both processes/ranks" of a job whose named ranks are 0 and 1 at most is ranks 0 and 1; for a
host-identity cause the ranks NCCL connected through an intra-host transport (P2P/SHM: it took
them for one host); and a best guess, where no line names a failing rank, takes the ranks the
whole input names (:func:`stated_ranks`, scoring.rescore).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rankmap.pci import try_normalize_bus_id

MAX_NAMED = 8
MAX_RANKS = 64
MAX_RANK = 1_000_000  # a larger number is no rank of a job

_BUS_FULL = re.compile(r"(?<![\w:.])[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7](?![\w:])")
_BUS_AFTER_WORD = re.compile(  # short forms only where a bus-id word says what they are
    r"(?i)\b(?:(?:pci[ _.-]?)?bus[ _-]?id(?!=\d+, pci_device_id=)\s*[:=]?\s*\[?"
    r"(?P<v>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]|(?:0x)?[0-9a-f]{2,12})"
    r"|pci\s*[:=]?\s*\[?(?P<w>[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]))(?![\w:.])"
)
_HEX_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# GPU-/MIG- UUIDs and the old MIG form MIG-GPU-<uuid>/<GPU instance>/<compute instance>
# (reference/cuda_devices.md: one device, not its parent GPU).
_UUID = re.compile(rf"\bMIG-GPU-{_HEX_UUID}/\d+/\d+|\b(?:MIG|GPU)-{_HEX_UUID}\b")
# torch.cuda.get_device_properties' repr: decimal numbers, the address torch itself forms as
# f"{domain:04x}:{bus:02x}:{device:02x}.0" (torch/numa/binding.py).
_TORCH_PROPS = re.compile(
    r"\bpci_bus_id=(?P<bus>\d{1,3}), pci_device_id=(?P<dev>\d{1,3}), pci_domain_id=(?P<dom>\d{1,5})\b"
)
_NUM = r"\d{1,7}"
_LIST = rf"{_NUM}(?:\s*(?:,|-|–|&|\band\b|\bto\b)\s*{_NUM})*"
# A rank word: not a counter (nranks, localRanks), not a node's rank (node_rank, group rank).
_NOT_COUNTER = r"(?<![\w-])(?<!node )(?<!group )(?<!machine )(?<!cross )(?<!node-)"
_ONE_RANK = rf"{_NOT_COUNTER}(?:(?:local|global|world)[_ ])?rank"
RANK_FORMS = re.compile(
    r"\[rank(?P<a>\d{1,7})\]"
    rf"|{_ONE_RANK}\s*[:=]?\s*\[(?P<h>{_LIST})\]"  # rank [0, 1]
    rf"|{_ONE_RANK}(?:\s*[:=]\s*|\s+|(?=\d))(?P<b>\d{{1,7}}(?:\s+(?:and|&)\s+\d{{1,7}})?)\b"
    rf"|{_NOT_COUNTER}ranks(?:\s*[:=]\s*|\s+)\[?(?P<i>{_LIST})\b"  # ranks 0 and 4, ranks 0-7
    r"|--local[_-]rank[= ](?P<c>\d{1,7})\b"
    r"|^\[\d+,(?P<d>\d{1,7})\]<std(?:out|err)>:"
    r"|^\[(?P<e>\d{1,7})\]:"
    r"|^\[default(?P<f>\d{1,7})\]:"
    r"|\bprocess (?P<g>\d{1,7}) terminated\b"
    r"|^\((?:Vllm)?Worker(?:_PP0)?_TP(?P<j>\d{1,7}) pid="
    # a launcher's rank variable printed (reference/launchers.md §5, §6)
    r"|\b(?:SLURM_PROCID|PROC_?ID|OMPI_COMM_WORLD_RANK|PMIX?_RANK)\s*[=:]\s*(?P<k>\d{1,7})\b",
    re.IGNORECASE,
)
# A line reporting a failure: each alternative with a word that every match of it holds
# (lowercase), the gate tried before the regex (the regex costs ~50 us on an Init line, and a
# big log's candidate text is mostly Init lines).
_FAILURE_FORMS = (
    *((w, w) for w in ("error", "fail", "invalid", "terminat", "exception", "abort", "killed")),
    *((w, w) for w in ("traceback", "ordinal", "exitcode", "unrecognized", "duplicate")),
    *((w, w) for w in ("nccl warn", "crash", "segmentation", "signal", "exit code")),
    ("time", r"timed? ?out"),
    ("hang", r"\bhang"),
    ("stuck", "stuck"),
    ("deadlock", "deadlock"),
)
_FAILURE = re.compile("|".join(form for _, form in _FAILURE_FORMS), re.IGNORECASE)
_FAILURE_WORDS = tuple(word for word, _ in _FAILURE_FORMS)


def reports_failure(line: str) -> bool:
    """Whether ``line`` reports a failure (:data:`_FAILURE`). An ASCII line without one of the
    words is no match (caseless matching of non-ASCII text also folds "K", "ſ": regex only)."""
    if line.isascii():
        low = line.lower()
        if not any(word in low for word in _FAILURE_WORDS):
            return False
    return _FAILURE.search(line) is not None


_PAIR = re.compile(
    r"\bboth (?:of )?(?:the |my |our )?(?:processes|ranks|workers|procs)\b"
    r"|\b(?:processes|ranks|workers) (?:are |were |will )?both\b",
    re.IGNORECASE,
)
# NCCL's connection lines through a transport inside one host (reference/nccl.md (d) "Channel
# lines"): ``Channel 00 : 0[3000] -> 1[4000] via P2P/IPC`` (<= 2.17), ``Channel 00/0 : 0[0] ->
# 1[1] via P2P/IPC/read`` (2.18+), ``Ring 00 : 0[0] -> 1[1] via P2P/IPC`` and the oldest ``INFO 0
# -> 1 via P2P/IPC`` (2.0-2.3); ``[send] via NET/…`` goes between hosts and is not read.
_INTRA_HOST = re.compile(
    r"(?:\b(?:Ring|Channel) \d+(?:/\d+)? :|\bINFO) +(?P<a>\d{1,7})(?:\[[0-9a-fA-F]+\])? -> "
    r"(?P<b>\d{1,7})(?:\[[0-9a-fA-F]+\])? via (?:P2P|SHM)\b"
)


def devices_in(texts: Iterable[str], limit: int = MAX_NAMED) -> tuple[str, ...]:
    """Bus ids (canonical) then GPU/MIG UUIDs named in ``texts``, each once, in order."""
    buses: list[str] = []
    uuids: list[str] = []
    for text in texts:
        for m in _BUS_FULL.finditer(text):
            _add(buses, try_normalize_bus_id(m.group(0)), limit)
        for m in _BUS_AFTER_WORD.finditer(text):
            _add(buses, try_normalize_bus_id(m.group("v") or m.group("w")), limit)
        # (each pattern runs only where the literal every match of it holds is in the text)
        for m in _TORCH_PROPS.finditer(text) if "pci_bus_id=" in text else ():
            dom, bus, dev = int(m.group("dom")), int(m.group("bus")), int(m.group("dev"))
            if bus < 256 and dev < 32 and dom < 65536:
                _add(buses, try_normalize_bus_id(f"{dom:04x}:{bus:02x}:{dev:02x}.0"), limit)
        for m in _UUID.finditer(text) if "MIG-" in text or "GPU-" in text else ():
            _add(uuids, m.group(0), limit)
    return tuple(buses + uuids)


def _add(out: list[str], item: str | None, limit: int) -> None:
    if item and item not in out and len(out) < limit:
        out.append(item)


def ranks_on(line: str, limit: int = MAX_RANKS, *, stated: bool = False) -> set[int]:
    """Every rank ``line`` names, in the spellings of :data:`RANK_FORMS`, but those after
    "besides"/"except"; ``stated``: none on a line that lists ranks as a map."""
    out: set[int] = set()
    low = line.lower()
    if not any(key in low for key in _RANK_KEYS):
        return out
    if stated and _RANK_MAP_LINE.search(line):
        return out
    text = line.strip()
    for m in RANK_FORMS.finditer(text):
        if _NEGATED.search(text[max(0, m.start() - 16) : m.start()]):
            continue  # "all ranks except rank 0 fail": the others
        num = next(g for g in m.groups() if g is not None)
        out |= _expand(num, limit - len(out))
        if len(out) >= limit:
            break
    return out


_RANK_KEYS = (
    "ank",
    "[",
    "rocess",
    "worker",
    "procid",
    "proc_id",
)  # every spelling holds one: a cheap gate
# Lines that list ranks as a map (nccl-tests "Rank 0 Pid …", NCCL "rank 0 nranks 8 …"): every
# rank of the job, no statement about some of them.
_RANK_MAP_LINE = re.compile(r"\brank\s+\d+\s+(?:group\s+\d+\s+)?pid\b|\bn[Rr]anks\b", re.I)
_NEGATED = re.compile(r"\b(?:besides|except|other than|apart from|but not|not on)\s+$", re.I)


def _expand(text: str, room: int) -> set[int]:
    """``0 and 4`` -> {0, 4}; ``0-7`` -> {0..7}; at most ``room`` ranks."""
    out: set[int] = set()
    for part in _ITEM_SEP.split(text):
        nums = [int(b) for b in _RANGE_SEP.split(part) if b.isdecimal() and int(b) <= MAX_RANK]
        if not nums:
            continue
        if nums != sorted(nums):  # "2025-01" is a date, not a range: its numbers only
            out.update(nums[: room - len(out)])
            continue
        first, last = nums[0], nums[-1]
        out.update(range(first, min(last, first + room - len(out) - 1) + 1))
        if len(out) >= room:
            break
    return out


_ITEM_SEP = re.compile(r"\s*(?:,|&|\band\b)\s*", re.IGNORECASE)
_RANGE_SEP = re.compile(r"\s*(?:-|–|\bto\b)\s*", re.IGNORECASE)


def failing_ranks(lines: Iterable[str], limit: int = MAX_RANKS) -> set[int]:
    """Ranks that lines reporting a failure name; where some lines report the failure itself,
    not the others' reaction to it (:func:`is_aftermath`), only theirs."""
    first, after = failure_ranks(lines, limit)
    return first or after


# srun --label's task prefix ("3: RuntimeError: ..."; padded to the widest id, " 3: " among 16
# tasks: Slurm's "%*d: " label): the task id, SLURM_PROCID
_TASK_LABEL = re.compile(r"^\s*(\d{1,5}): ")
# srun's summary of the tasks that exited: "srun: error: node1: tasks 1-3: Exited with exit code 1"
# (not "task 0: Terminated" / "Killed": srun ending the tasks left once others failed)
_TASK_SUMMARY = re.compile(
    rf"^\s*(?:\d{{1,5}}: )?srun: error: [\w.-]+: tasks? (?P<l>{_LIST}): Exited with exit code [1-9]"
)


def failure_ranks(
    lines: Iterable[str],
    limit: int = MAX_RANKS,
    *,
    task_labels: bool = False,
    task_ranks: bool = False,
) -> tuple[set[int], set[int]]:
    """Ranks on lines reporting a failure: (the failure itself, the others' reaction).
    ``task_ranks``: srun started one task per rank, so srun's "tasks 1-3: Exited" names ranks;
    ``task_labels``: with --label too, so a line-leading ``N: `` is rank N (reference/launchers.md
    §5: SLURM_PROCID)."""
    first: set[int] = set()
    after: set[int] = set()
    lines = list(lines)
    by_pid = _ranks_by_pid(lines)
    for line in lines:
        if waited := _WAITED.search(line):
            # the ranks that waited for the failed ones, told in prose, are not failing: only
            # what the line says before them counts ("rank 3 dies … and the others hang …")
            line = _WAITERS_BEFORE.sub("", line[: waited.start()])
        if by_pid and reports_failure(line) and (pid := _PID.search(line)):
            rank = by_pid.get(pid.group(1))
            if rank is not None and len(first) < limit:  # Ray: "(pid=81423, ip=…)" of a rank
                (after if is_aftermath(line) else first).add(rank)
        if task_labels or task_ranks:
            summary = _TASK_SUMMARY.match(line)
            if summary:  # the launcher's account of tasks that ended: their reaction at most
                after |= _expand(summary.group("l"), limit - len(after))
                continue
        if task_labels:
            line = _TASK_LABEL.sub(r"[rank\1]: ", line, count=1)
        if len(first) >= limit:
            break
        if reports_failure(line):
            into = after if is_aftermath(line) else first
            if len(into) < limit:
                into |= ranks_on(line, limit - len(into))
    return first, after


# a process that prints its own rank beside its pid (Ray's "(TrainWorker pid=81423) rank=1")
_PID_RANK = re.compile(r"\bpid=(?P<pid>\d{1,9})\)?[^\n]{0,40}?\brank\s*[=:]\s*(?P<rank>\d{1,7})\b")
_PID = re.compile(r"\bpid=(\d{1,9})\b")


# "ranks 0-3 just hang in init_process_group until killed": the others' wait, in words
_WAITED = re.compile(
    r"\b(?:hang|hangs|hung|hanging|stuck|wait|waits|waiting)\b[^.\n]{0,80}\b(?:until|till)\b"
    r"[^.\n]{0,20}\b(?:killed|cancel\w*|time[sd]? ?out)\b",
    re.IGNORECASE,
)


# the subject of the wait ("and the other ranks", "Ranks 0-3 on the first node then just")
_WAITERS_BEFORE = re.compile(
    r"(?:\b(?:and|while|but)\s+)?(?:the\s+)?(?:other|remaining|rest of the)?\s*(?:ranks?|"
    r"processes|workers|tasks)\b[^.\n]{0,60}$",
    re.IGNORECASE,
)


def _ranks_by_pid(lines: list[str], limit: int = 4096) -> dict[str, int]:
    """pid -> the rank that process printed, where the same pid names one rank only."""
    seen: dict[str, set[int]] = {}
    for line in lines[:200_000]:
        if "pid=" not in line or len(seen) >= limit:
            continue
        if m := _PID_RANK.search(line):
            seen.setdefault(m.group("pid"), set()).add(int(m.group("rank")))
    return {pid: next(iter(r)) for pid, r in seen.items() if len(r) == 1}


def is_aftermath(line: str) -> bool:
    """Whether ``line`` is what a rank prints once another failed: a peer gone, a watchdog
    timeout, the launcher's SIGTERM."""
    return _AFTERMATH.search(line) is not None


# What the other ranks print once one has failed (reference/pytorch_nccl.md: ncclRemoteError,
# the watchdog's collective timeout; torchrun's SIGTERM to the remaining workers).
_AFTERMATH = re.compile(
    r"remote process|remote peer|peer (?:closed|reset)|connection (?:reset|closed|refused)|"
    r"broken pipe|closing signal|SIGTERM|exitcode\s*:\s*-15|watchdog|collective operation "
    r"timeout|communicator (?:was )?aborted|ncclRemoteError|socket (?:closed|timeout|has timed out)|"
    # Slurm cancelling the step's other tasks, and srun's summary of the tasks that exited
    r"\*\*\* (?:STEP|JOB) \S+ ON \S+ CANCELLED|^\s*(?:\d+: )?srun: error: [\w.-]+: tasks? ",
    re.IGNORECASE,
)


def stated_ranks(lines: Iterable[str], limit: int = MAX_RANKS) -> set[int]:
    """Every rank the lines name, failure word or not, none of a rank map's table: of the
    reporter's sentences, the ranks they speak of ("memory on rank 0"); of a whole input, the
    job's ranks (a log's ``for rank: 3``, ``[rank2]:``) where no line says which failed."""
    out: set[int] = set()
    for line in lines:
        if len(out) >= limit:
            break
        out |= ranks_on(line, limit - len(out), stated=True)
    return out


def pair_named(lines: Iterable[str]) -> bool:
    """Whether the text speaks of "both processes" / "both ranks" (a job of two)."""
    return any(_PAIR.search(line) for line in lines)


def intra_host_ranks(lines: Iterable[str], limit: int = MAX_RANKS) -> set[int]:
    """Ranks NCCL connected through P2P or SHM: ranks it took for one host."""
    out: set[int] = set()
    for line in lines:
        if " -> " not in line or len(out) >= limit:
            continue
        for m in _INTRA_HOST.finditer(line):
            for num in (m.group("a"), m.group("b")):
                if len(out) < limit:
                    out.add(int(num))
    return out
