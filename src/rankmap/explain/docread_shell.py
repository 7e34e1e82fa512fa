"""The commands of a pasted document (:func:`rankmap.explain.docread.read_document` calls it):
shell segments' launch lines and their environment, hosts and node counts, a batch script's
#SBATCH allocation, docker/podman runs, launch lines told in sentences, and the GPUs an engine
command's parallel sizes ask for.
"""

from __future__ import annotations

import contextlib
import re
import shlex

from rankmap.explain.docfacts import DocFacts
from rankmap.explain.document import (
    LAUNCHER_WORDS,
    WORDS_AFTER_SCRIPT,
    Segment,
    env_assignments,
    reads_as_prose,
    shell_commands,
    without_words_after,
)
from rankmap.numbers import saturating_int

_SIMULATED = re.compile(
    r"^(?:(?:env\s+)?[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\S*/)?(?:torchrun|python[\d.]*\s+-m\s+torch\."
    r"distributed\.(?:launch|run)|accelerate\s+launch|deepspeed|srun|mpirun|mpiexec)\s"
    # a launcher's own report, not a command: Open MPI's "mpirun noticed that process rank 8
    # ... exited on signal 6", "mpirun has exited due to process rank 3", "mpirun was unable to"
    r"(?!\s*(?:noticed|has|had|was|were|detected|could|did|does|is|will|cannot|can't|failed|"
    r"received|found|encountered|exited|aborted|killed|reported|returned)\b)"
)


_ANY_LAUNCH = re.compile(rf"(?:^|\s)(?:{LAUNCHER_WORDS})(?:\s|$)")


_HOSTS = re.compile(r"(?:^|\s)(?:-H|--host|-host|--hosts)[ =](?P<list>\S+)")


# the same list in a sentence, after an MPI launcher's name
_PROSE_HOSTS = re.compile(
    r"\b(?:mpirun|mpiexec|horovodrun)\s[^\n]{0,80}?\s(?:-H|--host|-host|--hosts)[ =]"
    r"(?P<list>[\w.:-]+(?:,[\w.:-]+)+)"
)


NODES_OPTION = re.compile(r"(?:--nnodes|--num[_-]machines|--num[_-]nodes|-N|--nodes)[ =](?P<n>\d+)")


# The GPUs one server / engine process asks for: vLLM / SGLang / TGI's tensor-parallel size
# ("--tensor-parallel-size 2", "-tp 2", "tensor_parallel_size=2", "--tp 2", "--num-shard 2").
_PARALLEL_SIZE = re.compile(
    r"(?:--tensor[-_]parallel[-_]size|--tp(?:[-_]size)?|(?<![\w-])-tp|tensor_parallel_size|"
    r"--num[-_]shard)\s*[= ]\s*(\d{1,3})\b"
)


# The other dimensions an engine multiplies it by: pipeline and data parallel sizes (vLLM's
# world is tp x pp, SGLang's and vLLM's data-parallel replicas take GPUs of their own; review 35)
_PIPELINE_SIZE = re.compile(
    r"(?:--pipeline[-_]parallel[-_]size|--pp(?:[-_]size)?|(?<![\w-])-pp|pipeline_parallel_size)"
    r"\s*[= ]\s*(\d{1,3})\b"
)


# (the replicas on this node: --data-parallel-size-local where given; SGLang's DP attention
# keeps its DP ranks inside the tensor-parallel group: no GPUs of their own; review 38)
_DATA_SIZE = re.compile(
    r"(?:--data[-_]parallel[-_]size(?P<local>[-_]local)?|--dp(?:[-_]size)?|(?<![\w-])-dp|"
    r"data_parallel_size)\s*[= ]\s*(?P<n>\d{1,3})\b"
)


MAX_PARALLEL_COMMANDS = 8


# The #SBATCH options that decide tasks and GPUs per node (launchers.md §5): an srun inside the
# batch script inherits the allocation they make.
_ALLOCATION = ("nodes", "ntasks", "ntasks_per_node", "gpus", "gpus_per_node", "gpus_per_task",
               "gres", "gpu_bind")  # fmt: skip


def with_sbatch(launch: str, sbatch: dict[str, str]) -> str:
    """A pasted ``srun`` line with the allocation of the batch script around it, as options in
    front of its own (which win): ``srun --ntasks-per-node=8 --gpus-per-node=4 python ...``."""
    m = re.match(r"^((?:(?:env\s+)?[A-Z_][A-Z0-9_]*=\S*\s+)*(?:\S*/)?srun)(\s.*)$", launch, re.S)
    opts = [f"--{k.replace('_', '-')}={sbatch[k]}" for k in _ALLOCATION if k in sbatch]
    if not m or not opts:
        return launch
    return f"{m.group(1)} {' '.join(shlex.quote(o) for o in opts)}{m.group(2)}"


_CONTAINER_RUN = re.compile(r"\b(?:docker|podman) (?:container )?run\b")


MAX_CONTAINER_RUNS = 16


def read_container_runs(seg: Segment, facts: DocFacts) -> None:
    """``docker/podman run`` commands: joined across ``\\`` in a shell segment, single lines
    elsewhere (a command pasted among log lines). One that continues past its segment ends in
    ``\\``: its options are not all known."""
    if seg.kind == "shell":
        cmds = [cmd for _, cmd, _ in shell_commands(seg)]
        if seg.text.rstrip().endswith("\\") and cmds:
            cmds[-1] += " \\"
    else:
        cmds = [ln.strip() for ln in seg.text.split("\n")]
    for cmd in cmds:
        if _CONTAINER_RUN.search(cmd) and len(facts.container_runs) < MAX_CONTAINER_RUNS:
            facts.container_runs.append(cmd[:4000])


def read_sbatch(seg: Segment, facts: DocFacts) -> None:
    """``#SBATCH`` lines of a batch script, pasted as a script or among the job's output."""
    from rankmap.errors import RankMapError
    from rankmap.launchers.slurm_options import parse_sbatch_lines

    with contextlib.suppress(RankMapError):
        facts.sbatch.update(parse_sbatch_lines(seg.text))


def shell_caption(seg: Segment) -> str:
    """The last line of a prose segment when it names a machine and ends with a colon ("Node A
    (10.2.0.5):", "On worker-1:"): the prompt of the command block below it (review 59); a line
    of up to 120 characters, which may say more of the command ("copied from node A unchanged",
    review 74)."""
    if seg.kind != "prose":
        return ""
    last = seg.text.rstrip().rsplit("\n", 1)[-1].strip()
    names = _NODE_WORDS.findall(last[:-1]) if last.endswith(":") and len(last) <= 120 else []
    # the machine's own name or address, not the words around it: "Again on node0:" and "On
    # node0:" caption the same machine (review 61)
    named = [n for n in names if any(c.isdigit() for c in n)] or names
    return named[-1].lower() if named else ""


def read_shell(seg: Segment, facts: DocFacts, caption: str = "") -> None:
    for n, (_, cmd, prompt) in enumerate(shell_commands(seg)):
        prompt = prompt or (caption if n == 0 else "")
        if _ANY_LAUNCH.search(cmd) and len(facts.commands) < 32:
            facts.commands.append(cmd[:2000])
            facts.prompts.append(prompt)
        if _SIMULATED.match(cmd) and not reads_as_prose(cmd):
            facts.launch = without_words_after(cmd)[:2000]
        if hm := _HOSTS.search(cmd):
            _host_list(hm.group("list"), facts)
        nm = NODES_OPTION.search(cmd)
        if nm:
            facts.hosts_in_launch = max(facts.hosts_in_launch, int(nm.group("n")))
        for k, v in env_assignments(Segment("env", cmd, 0)).items():
            facts.env.setdefault(k, v)
        prefix = _env_prefix(cmd)
        for k, v in prefix.items():  # "CUDA_VISIBLE_DEVICES=3 vllm serve ..."
            facts.env.setdefault(k, v)
        _parallel_visible(prefix, cmd, facts)
        sizes = [int(n) for n in _PARALLEL_SIZE.findall(cmd)]
        if sizes and not re.search(r"--nnodes|--num-nodes|ray", cmd):
            # the last such command: a run the writer corrected is told before the one that
            # failed (review 61)
            facts.engine_gpus = _engine_gpus(sizes[-1], cmd)


_ASSIGNMENT = re.compile(r"^(?P<k>[A-Z_][A-Z0-9_]*)=(?P<v>\S*)$")


# the sentence after a command on its line: ". I followed ...", ". It fails with ..."
_SENTENCE_AFTER = re.compile(r"\.\s+(?=[A-Z][a-z']*\s+\w+\s+\w+)")


def shell_sentences(seg: Segment) -> list[Segment]:
    """The reporter's sentences that follow a command on a shell line, as prose of their own
    line (a line read as shell for its command keeps its words for the prose signals)."""
    out: list[Segment] = []
    for no, line in seg.lines():
        m = _SENTENCE_AFTER.search(line, 12) or WORDS_AFTER_SCRIPT.search(line)
        if m and len(out) < 16:
            out.append(Segment("prose", line[m.end() :], no))
    return out


def read_prose_commands(seg: Segment, facts: DocFacts) -> None:
    """A command at the start of a prose or log line, with the sentence after it ("CUDA_VISIBLE_DEVICES=0,1
    vllm serve m --tp 1 does not use both GPUs"): its environment words and parallel size."""
    for _, line in seg.lines():
        prefix = _env_prefix(line.strip())
        if prefix:
            _parallel_visible(prefix, line, facts)


# a node's launch line told in a sentence: "node B (10.0.0.12): torchrun --nnodes=2 ..."
_PROSE_LAUNCH = re.compile(
    r"^(?P<who>[^`\n]{1,60}?):\s*`?(?P<cmd>(?:torchrun|accelerate launch|python[\d.]* -m "
    r"torch\.distributed\.(?:run|launch))\s[^`\n]+)"
)


# the words before such a line name a machine ("node A (10.0.0.11)", "worker-1", "host2"), not
# an attempt ("First attempt", "Then") (review 57)
_NODE_WORDS = re.compile(
    r"\b(?:node|host|machine|server|worker|master|head|vm|pod|instance)\w*\b|"
    r"\b\d{1,3}(?:\.\d{1,3}){3}\b|\b[a-z][\w-]*\d+\b",
    re.IGNORECASE,
)


def _host_list(listed: str, facts: DocFacts) -> None:
    """An MPI host list (``-H a:1,b:1``): how many machines, and the slots each is given when
    every entry states them (Open MPI's ``host:slots``)."""
    entries = [h for h in listed.split(",") if h]
    names = {h.split(":")[0] for h in entries}
    facts.hosts_in_launch = max(facts.hosts_in_launch, len(names))
    slots = [h.rpartition(":")[2] for h in entries]
    if entries and all(":" in h and n.isdecimal() for h, n in zip(entries, slots, strict=True)):
        facts.slots_per_host = max(saturating_int(n) for n in slots)


def read_prose_launches(seg: Segment, facts: DocFacts) -> None:
    """Launch lines a sentence gives per machine ("node A: torchrun ..."): each with the words
    before it as its prompt, so that the lines of the nodes are compared (node_launches.py)."""
    for _, line in seg.lines():
        if hm := _PROSE_HOSTS.search(line):  # "... then mpirun -np 2 -H a:1,b:1 python x.py"
            _host_list(hm.group("list"), facts)
        m = _PROSE_LAUNCH.match(line.strip())
        if m and _NODE_WORDS.search(m.group("who")) and len(facts.commands) < 32:
            facts.commands.append(m.group("cmd").strip()[:2000])
            facts.prompts.append(m.group("who").strip())


def _parallel_visible(prefix: dict[str, str], cmd: str, facts: DocFacts) -> None:
    """A command that sets CUDA_VISIBLE_DEVICES and a tensor-parallel size, on one node
    (``--nnodes`` / Ray's multi-node placement spread it; review 25): the list and the GPUs the
    engine asks for (tensor x pipeline x data parallel)."""
    visible = prefix.get("CUDA_VISIBLE_DEVICES")
    sizes = [int(n) for n in _PARALLEL_SIZE.findall(cmd)] or _default_size(cmd)
    if visible is None or "$" in visible or not sizes:
        return
    if len(facts.parallel_visible) >= MAX_PARALLEL_COMMANDS:
        return
    if not re.search(r"--nnodes|--num-nodes|ray", cmd):
        facts.parallel_visible.append((visible, _engine_gpus(sizes[-1], cmd)))


# An inference server whose tensor-parallel size defaults to 1: it uses one GPU of those it sees
# unless told more (vLLM's --tensor-parallel-size, https://docs.vllm.ai/en/latest/configuration/
# engine_args.html; SGLang's --tp-size, https://docs.sglang.ai/backend/server_arguments.html).
_ONE_GPU_BY_DEFAULT = re.compile(
    r"\bvllm\s+serve\b|\bvllm\.entrypoints\.|\bsglang\.launch_server\b"
)


# any parallel-size option, or a config file that may set one: no default is assumed then
_SIZE_GIVEN = re.compile(
    r"--tensor[-_]parallel|--tp\b|(?<![\w-])-tp\b|tensor_parallel_size|--pipeline[-_]parallel|"
    r"--data[-_]parallel|--dp\b|--config\b"
)


def _default_size(cmd: str) -> list[int]:
    """``[1]`` for a server command that names no parallel size (in any form, a config file
    included) and uses one GPU by default."""
    return [1] if _ONE_GPU_BY_DEFAULT.search(cmd) and not _SIZE_GIVEN.search(cmd) else []


def _engine_gpus(tensor: int, cmd: str) -> int:
    """The GPUs one engine command uses on its node: tensor x pipeline x data-parallel replicas
    (each option's last value, as the engine's parser takes it)."""
    pipeline = [int(n) for n in _PIPELINE_SIZE.findall(cmd)]
    data = list(_DATA_SIZE.finditer(cmd))
    local = [m for m in data if m.group("local")]
    replicas = int((local or data)[-1].group("n")) if data else 1
    if "--enable-dp-attention" in cmd:
        replicas = 1
    return max(1, tensor) * max(1, pipeline[-1] if pipeline else 1) * max(1, replicas)


def _env_prefix(cmd: str) -> dict[str, str]:
    """The ``KEY=value`` words before a command's program (its environment)."""
    out: dict[str, str] = {}
    for word in cmd.split()[:16]:
        m = _ASSIGNMENT.match(word.strip("'\""))
        if m is None:
            break
        out[m.group("k")] = m.group("v").strip("'\"")
    return out
