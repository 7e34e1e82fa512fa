"""The launch lines of one multi-node job read together: a paste that shows the command of each
node ("node1$ torchrun --nnodes 2 --node_rank 0 ...", "node2$ torchrun ...") shows what every
node was told. Two nodes told the same node rank claim the same ranks, and nodes told different
node counts wait for different worlds (reference/launchers.md §1: torchrun's --nnodes and
--node-rank; accelerate's num_machines and machine_rank).

Only the lines of one job count: the same script and the same rendezvous address. Lines of a
tutorial that differ in their node rank, or a single command, say nothing here.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from rankmap.launchers.options import option_value

_NNODES = ("--nnodes", "--num_machines", "--num-machines")
_NODE_RANK = ("--node_rank", "--node-rank", "--machine_rank", "--machine-rank")
_ADDRESS = ("--master_addr", "--master-addr", "--main_process_ip", "--rdzv_endpoint",
            "--rdzv-endpoint")  # fmt: skip
# what the lines of every node decide is the cause itself (scoring.STRONG): it names the cause
# even next to the store timeout it produces
DECIDED = 5.0
_LAUNCHERS = ("torchrun", "torch.distributed.run", "torch.distributed.launch", "accelerate")


@dataclass(frozen=True)
class NodeLine:
    """What one node's launch line says about the job."""

    script: str
    nnodes: str | None
    node_rank: str | None
    address: str | None
    text: str
    prompt: str = ""  # the shell prompt it was pasted with ("node1$")


def _parse(command: str, prompt: str = "") -> NodeLine | None:
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    at = next((i for i, w in enumerate(argv) if any(w.endswith(n) for n in _LAUNCHERS)), None)
    if at is None:
        return None
    rest = argv[at + 1 :]
    script = next((w for w in rest if w.endswith(".py") or w.endswith(".sh")), "")
    return NodeLine(
        script=script,
        nnodes=option_value(rest, _NNODES),
        node_rank=option_value(rest, _NODE_RANK),
        address=option_value(rest, _ADDRESS),
        text=command.strip()[:160],
        prompt=prompt,
    )


def _jobs(parsed: Sequence[NodeLine]) -> list[list[NodeLine]]:
    """Launch lines grouped by job: the same script and the same rendezvous address. One
    command pasted twice (in a code block and after a prompt, or twice after one prompt) is one
    line: two nodes show as two prompts (review 25)."""
    groups: dict[tuple[str, str | None], list[NodeLine]] = {}
    for line in parsed:
        if not line.script:
            continue
        group = groups.setdefault((line.script, line.address), [])
        if not any(_same_line(line, other) for other in group):
            group.append(line)
    return [g for g in groups.values() if len(g) >= 2]


def _same_line(a: NodeLine, b: NodeLine) -> bool:
    """The same command, not pasted from two different prompts."""
    return a.text == b.text and not (a.prompt and b.prompt and a.prompt != b.prompt)


# The fix of a node rank that several nodes claim (host_identity by the contract: duplicated
# node ranks): each node's own rank, not a machine identity.
NODE_RANK_FIX = (
    "Give every node its own node rank: `--node_rank=0` on the first node, `--node_rank=1` on "
    "the second, and so on (or `--node_rank=$SLURM_NODEID` / the scheduler's node index); "
    "`--nnodes`, `--master_addr` and `--master_port` stay the same everywhere."
)


def node_launch_points(
    commands: Sequence[str], prompts: Sequence[str] = (), *, same_everywhere: bool = False
) -> list[tuple[str, float, str]]:
    """(category, points, reason) from the launch lines of each node of one job;
    ``same_everywhere``: the writer says one command ran on every node."""
    padded = [*prompts, *[""] * len(commands)]
    parsed = [ln for cmd, p in zip(commands, padded, strict=False) if (ln := _parse(cmd, p))]
    out: list[tuple[str, float, str]] = []
    if same_everywhere:
        out += _one_command_fixed_rank(parsed)
    for lines in _jobs(parsed):
        counts = {ln.nnodes for ln in lines if ln.nnodes is not None and "$" not in ln.nnodes}
        # lines of one multi-node job each say which node they start (a node rank): "works with
        # --nnodes 1, fails with --nnodes 2" are two experiments (review 25)
        if len(counts) >= 2 and all(ln.node_rank is not None for ln in lines):
            out.append(
                (
                    "launcher_config",
                    DECIDED,
                    f"the launch lines of one job wait for different node counts "
                    f"({', '.join(sorted(counts))}): `{lines[0].text}`",
                )
            )
            continue
        multi = any(n.isdecimal() and int(n) > 1 for n in counts)
        # a rank the shell fills in (`--node_rank=$NODE_RANK`) is each node's own (review 23)
        ranks = [
            ln.node_rank for ln in lines if ln.node_rank is not None and "$" not in ln.node_rank
        ]
        if multi and len(ranks) >= 2 and len(set(ranks)) < len(ranks):
            out.append(
                (
                    "host_identity",
                    DECIDED,
                    f"two launch lines of one {max(counts)}-node job give the same node rank "
                    f"{ranks[0]}: both nodes claim the same ranks (`{lines[0].text}`)",
                )
            )
    return out


def _one_command_fixed_rank(parsed: Sequence[NodeLine]) -> list[tuple[str, float, str]]:
    """One multi-node command with its node rank written in, run on every node (as the writer
    says): every node claims that node rank; not where the paste shows other node ranks too
    ("only the node rank differs", review 25)."""
    if len({line.node_rank for line in parsed if line.node_rank}) > 1:
        return []
    for line in parsed:
        if line.node_rank is None or not (line.nnodes or "").isdecimal():
            continue
        if not line.node_rank.isdecimal():
            continue  # `--node_rank $NODE_RANK`: each node's own
        if int(line.nnodes or 0) > 1:
            return [
                (
                    "host_identity",
                    4.0,
                    f"one command with --node-rank {line.node_rank} for a {line.nnodes}-node job, "
                    f"run on every node: all of them claim node rank {line.node_rank} "
                    f"(`{line.text}`)",
                )
            ]
    return []
