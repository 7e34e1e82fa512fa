"""What the user told ``explain`` besides the log: launch command, env, machines, script.

The launch command goes through ``rankmap.check.engine.check_launch`` (the ``check`` simulation) when
that module is present; a small built-in parser of the same flags is the fallback, so explain
works on its own. The script is only ever parsed with :mod:`ast`, never imported or run.
"""

from __future__ import annotations

import ast
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.findings import Finding
from rankmap.model import Gpu, Host
from rankmap.numbers import saturating_int
from rankmap.sources import Files

_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_INT_FLAGS = {
    "--nproc_per_node": "nproc",
    "--nproc-per-node": "nproc",
    "--num_gpus": "nproc",
    "--num-gpus": "nproc",
    "--num_accelerators": "nproc",
    "--ntasks-per-node": "nproc",
    "--num_processes": "total",
    "--num-processes": "total",
    "-np": "total",
    "-n": "total",
    "--ntasks": "total",
    "--nnodes": "nnodes",
    "--num_machines": "nnodes",
    "--num-machines": "nnodes",
    "--num_nodes": "nnodes",
    "-N": "nnodes",
    "--nodes": "nnodes",
    "--gpus-per-task": "gpt",
    "--gpus-per-node": "gpn",
}
_GRES_GPU = re.compile(r"^gpu(?::[\w.-]+)?:(?P<n>\d+)$")


@dataclass(frozen=True)
class LaunchFacts:
    """The launch command's numbers (``None``: not stated)."""

    command: str
    launcher: str | None = None
    nproc_per_node: int | None = None
    nnodes: int | None = None
    gpus_per_task: int | None = None
    gpus_per_node: int | None = None  # Slurm --gpus-per-node / --gres=gpu:N: the node's allocation
    device_selection: str | None = None  # from check's simulation or the script
    env: tuple[tuple[str, str], ...] = ()  # VAR=value assignments before the command
    nested_in: str | None = None  # "srun"/"mpirun" wrapping torchrun/accelerate/deepspeed
    outer_tasks_per_node: int | None = None  # tasks per node of the outer launcher
    check_findings: tuple[Finding, ...] = ()
    predicted_errors: tuple[str, ...] = ()


@dataclass(frozen=True)
class Context:
    """Everything known besides the log."""

    launch: LaunchFacts | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    machines: tuple[Host, ...] = ()
    script_selection: str | None = None  # local_rank | global_rank | constant | none | unknown
    script_path: str | None = None
    notes: tuple[str, ...] = ()
    log_gpu_count: int | None = None  # GPU rows of an nvidia-smi table pasted with the log

    def cvd_entries(self) -> list[str] | None:
        """Entries of CUDA_VISIBLE_DEVICES from --env / the launch command, None when unset."""
        cvd = self.env.get("CUDA_VISIBLE_DEVICES")
        if cvd is None:
            return None
        return [e.strip() for e in cvd.split(",") if e.strip()]

    def gpus_per_node(self) -> int | None:
        """GPU count of the (first) machine given, else of an nvidia-smi table in the log."""
        if not self.machines:
            return self.log_gpu_count
        # A MIG GPU offers one CUDA device per instance to the processes of a job.
        return sum(max(1, len(g.mig_devices)) if g.mig_mode else 1 for g in self.machines[0].gpus)

    def selection(self) -> str | None:
        """How the job selects devices: the script's answer, else the simulation's."""
        if self.script_selection and self.script_selection != "unknown":
            return self.script_selection
        return self.launch.device_selection if self.launch else None


def parse_launch(command: str) -> LaunchFacts:
    """Read launcher, processes per node and node count from a launch command (best effort)."""
    try:
        tokens = shlex.split(command)
    except ValueError:
        tokens = command.split()
    env: list[tuple[str, str]] = []
    while tokens and _ASSIGN.match(tokens[0]):
        k, _, v = tokens.pop(0).partition("=")
        env.append((k, v))
    if tokens and tokens[0] == "env":
        tokens.pop(0)
        while tokens and _ASSIGN.match(tokens[0]):
            k, _, v = tokens.pop(0).partition("=")
            env.append((k, v))
    launcher = _launcher(tokens)
    outer, tokens = _split_nested(tokens)
    nums: dict[str, int] = {}
    for i, tok in enumerate(tokens):
        name, eq, val = tok.partition("=")
        if name in _INT_FLAGS:
            raw = val if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            raw = raw.rsplit(":", 1)[-1] if name == "--gpus-per-node" else raw  # a100:4
            if raw.isdigit() and _INT_FLAGS[name] not in nums:
                nums[_INT_FLAGS[name]] = saturating_int(raw)
        if name == "--gres":
            gm = _GRES_GPU.match(val if eq else (tokens[i + 1] if i + 1 < len(tokens) else ""))
            if gm and "gpn" not in nums:
                nums["gpn"] = saturating_int(gm.group("n"))
        if name in ("--include", "-i") and launcher == "deepspeed":
            raw = val if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            if "@" not in raw and ":" in raw:
                slots = raw.split(":", 1)[1]
                env.append(("CUDA_VISIBLE_DEVICES", slots))
                nums.setdefault("nproc", len(slots.split(",")))
    nnodes = nums.get("nnodes")
    nproc = nums.get("nproc")
    if nproc is None and "total" in nums:
        nproc = nums["total"] // max(1, nnodes or 1)
    outer_tasks = None
    for i, tok in enumerate(outer):
        name, eq, val = tok.partition("=")
        if name in ("--ntasks-per-node", "--npernode", "-npernode"):
            raw = val if eq else (outer[i + 1] if i + 1 < len(outer) else "")
            outer_tasks = saturating_int(raw) if raw.isdigit() else None
    return LaunchFacts(
        command=command,
        launcher=launcher,
        nproc_per_node=nproc,
        nnodes=nnodes,
        gpus_per_task=nums.get("gpt"),
        gpus_per_node=nums.get("gpn"),
        env=tuple(env),
        nested_in=outer[0] if outer else None,
        outer_tasks_per_node=outer_tasks,
    )


_INNER = (
    "torchrun",
    "torch.distributed.run",
    "torch.distributed.launch",
    "accelerate",
    "deepspeed",
)


def _split_nested(tokens: list[str]) -> tuple[list[str], list[str]]:
    """``srun ... torchrun ...`` -> (outer srun/mpirun tokens, inner launcher tokens)."""
    if not tokens or Path(tokens[0]).name not in ("srun", "mpirun", "mpiexec"):
        return [], tokens
    for i, tok in enumerate(tokens[1:], 1):
        if any(Path(tok).name == name or tok == name for name in _INNER):
            return tokens[:i], tokens[i:]
        if tok == "-m" and i + 1 < len(tokens) and tokens[i + 1] in _INNER[1:3]:
            return tokens[:i], tokens[i:]
    return [], tokens


def _launcher(tokens: Sequence[str]) -> str | None:
    text = " ".join(tokens[:6])
    for needle, name in (
        ("torch.distributed.launch", "torch.distributed.launch"),
        ("torch.distributed.run", "torchrun"),
        ("torchrun", "torchrun"),
        ("accelerate", "accelerate"),
        ("deepspeed", "deepspeed"),
        ("srun", "srun"),
        ("mpirun", "mpirun"),
        ("mpiexec", "mpirun"),
        ("python", "python"),
    ):
        if needle in text:
            return name
    return None


def simulate_launch(
    command: str,
    machines: Sequence[Host],
    env: Mapping[str, str],
    script: Path | None,
    files: Files | None = None,
) -> LaunchFacts:
    """:func:`parse_launch`, enriched by ``rankmap.check.engine.check_launch`` when that is installed."""
    facts = parse_launch(command)
    from rankmap.check.engine import check_launch
    from rankmap.errors import RankMapError

    try:
        argv = shlex.split(command)
        report = check_launch(
            argv, machines=list(machines), env=dict(env), script=script, files=files
        )
    except (RankMapError, ValueError, OSError):
        return facts
    launch = report.sections.get("launch") or {}
    return LaunchFacts(
        command=command,
        launcher=launch.get("launcher", facts.launcher),
        nproc_per_node=launch.get("nproc_per_node", facts.nproc_per_node),
        nnodes=launch.get("nnodes", facts.nnodes),
        gpus_per_task=facts.gpus_per_task,
        gpus_per_node=facts.gpus_per_node,
        device_selection=launch.get("device_selection"),
        env=facts.env,
        nested_in=facts.nested_in,
        outer_tasks_per_node=facts.outer_tasks_per_node,
        check_findings=tuple(report.ordered_findings()),
        predicted_errors=tuple(report.sections.get("predicted_errors") or ()),
    )


def script_selection(source: str) -> str:
    """How a training script picks its GPU, read with :mod:`ast` (never executed).

    ``local_rank`` | ``global_rank`` | ``constant`` | ``none`` | ``unknown`` (unparseable).
    NOTE: a heuristic over names; ``rankmap check --script`` does the full analysis.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return "unknown"
    verdicts: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _call_name(node.func)
            if name == "set_device" and node.args:
                verdicts.append(_arg_kind(node.args[0]))
            for kw in node.keywords:
                if kw.arg == "device_id":
                    verdicts.append(_arg_kind(kw.value))
    if not verdicts:
        return "none"
    for kind in ("global_rank", "constant", "local_rank"):
        if kind in verdicts:
            return kind
    return "local_rank"


def _call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def _arg_kind(arg: ast.expr) -> str:
    if isinstance(arg, ast.Constant):
        return "constant"
    text = ast.unparse(arg)
    low = text.lower()
    if "local" in low or "slurm_localid" in low or "local_rank" in low:
        return "local_rank"
    if "get_rank" in low or "'rank'" in low or '"rank"' in low or re.search(r"\brank\b", low):
        return "global_rank"
    return "local_rank"


def gpu_for_bus(machines: Sequence[Host], bus_id: str, host: str | None) -> tuple[Host, Gpu] | None:
    """The machine GPU at ``bus_id``: on the host named ``host`` when given, else any match."""
    matches = [(h, g) for h in machines for g in h.gpus if g.pci_bus_id == bus_id]
    for h, g in matches:
        if host and (h.hostname == host or h.hostname.split(".")[0] == host):
            return h, g
    return matches[0] if matches else None
