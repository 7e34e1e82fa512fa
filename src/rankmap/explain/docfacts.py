"""What the non-log parts of a pasted document say (:func:`rankmap.explain.docread.read_document`
fills it): the signals found per segment, launch lines, env, code, nvidia-smi, configs, counts.
"""

from __future__ import annotations

import os
import shlex
from collections import Counter
from dataclasses import dataclass, field

from rankmap.explain.catalogue import Signal
from rankmap.explain.configs import ConfigFacts, config_machines
from rankmap.explain.versions import Versions
from rankmap.launchers import python_module
from rankmap.launchers.command import parse_command


@dataclass(frozen=True)
class Hit:
    """One signal found in one segment."""

    signal: Signal
    segment: str  # the segment kind
    where: str  # source:line
    excerpt: str


def plain_python_run(command: str) -> bool:
    """``python train.py`` (env assignments, nohup and interpreter options allowed), not
    ``python -m pkg``: a module may start workers of its own (an inference server's per GPU).
    The words are read as check reads a launch: the shell's assignments and wrappers
    (``parse_command``), then the interpreter's ``-m`` (``python_module``)."""
    try:
        words = shlex.split(command)
    except ValueError:  # an unbalanced quote in a pasted line: its words as they stand
        words = command.split()
    cmd = parse_command(words, {})
    argv = list(cmd.argv)
    python = len(argv) >= 2 and os.path.basename(argv[0]).startswith("python")
    return python and set(cmd.wrappers) <= {"nohup"} and python_module(argv) is None


# Signals of a job with a worker process per GPU, or of a launch the input does not show.
SEVERAL_PROCESS_WORDS = frozenset(
    {
        "ray", "ray-named", "ray-noset", "ray-fractional-gpu", "dask-cuda", "jax-distributed",
        "jax-process-id-local", "horovod", "mpi-local", "gpus-per-task", "slurm-tasks",
        "accelerate-config", "deepspeed-include", "lightning", "dist-launch", "multi-node",
        "spawn-independent", "shell-script-launch", "tf-cluster-config", "jsrun-gpu-per-set",
        "cvd-per-rank", "scheduler-sets-cvd", "vllm", "sglang",
    }
)  # fmt: skip


@dataclass
class DocFacts:
    """What the non-log parts of the input say (all optional)."""

    hits: dict[str, Hit] = field(default_factory=dict)  # first hit per signal id
    counts: Counter[str] = field(default_factory=Counter)
    segments: Counter[str] = field(default_factory=Counter)
    launch: str | None = None  # the last simulated-launcher command line
    sbatch: dict[str, str] = field(default_factory=dict)  # a pasted batch script's #SBATCH options
    lightning_devices: int | None = None  # Trainer(devices=N) / Fabric(devices=N) in pasted code
    commands: list[str] = field(default_factory=list)  # every launch-like command
    prompts: list[str] = field(default_factory=list)  # the shell prompt before each of them
    env: dict[str, str] = field(default_factory=dict)
    code_kind: str | None = None  # check's DeviceSelection.kind of the pasted code
    code_call: str | None = None
    code_spawns: bool = False  # the pasted code starts worker processes itself (mp.spawn)
    spawn_count: int | None = None  # how many, where check's analysis read nprocs
    smi_gpus: int | None = None
    stated_gpus: int | None = None  # "2 GPUs" in the prose
    stated_gpus_at: str = ""  # where the prose says it (source:line: the sentence)
    stated_procs: int | None = None  # "8 processes", "--nproc_per_node 4" in the prose
    configs: ConfigFacts = field(default_factory=ConfigFacts)  # accelerate, pod spec, hostfile
    frameworks: list[str] = field(default_factory=list)
    failed: bool = False  # something failed (an error line, a traceback, "does not work")
    hypothetical: bool = False  # asking about a failure the writer has not had, no run's output
    resolved: str | None = None  # the words telling a failure that is over ("[solved]", ...)
    resolved_in_title: bool = False  # the words that tell it solved are on the first line
    resolved_until: int | None = None  # the line where the writer turns to another failure
    log_lines: int = 0  # lines of the document read as program output
    described: bool = False  # a prose sentence of the writer's own (not a quoted message)
    names_gpus: bool = False  # the text speaks of GPUs, CUDA, NCCL or their devices at all
    # the pasted CUDA_VISIBLE_DEVICES is 0..N-1 of the N GPUs the machine has: it narrows nothing
    cvd_whole_machine: bool = False
    hosts_in_launch: int = 0  # distinct hosts a pasted launch names (mpirun -H, --nnodes)
    slots_per_host: int | None = None  # the most slots an MPI host list gives one host
    stated_machines: int = 0  # machines the prose counts ("2 machines, 8 GPUs each")
    visible_range: int = 0  # devices a process saw, from XLA/TF "Valid range is [0, k]" (k + 1)
    gpu0_extra: str | None = None  # an nvidia-smi process table: a PID on GPU 0 and another GPU
    every_gpu: str | None = None  # an nvidia-smi process table: several PIDs, each on every GPU
    every_gpu_quote: str = ""
    gpu0_quote: str | None = None
    shared_gpu: str | None = None  # an nvidia-smi process table: several PIDs on one GPU
    smi_models: dict[int, str] = field(default_factory=dict)  # nvidia-smi index -> GPU model
    device_name_printed: str | None = None  # the process's own cuda:0, by its model name
    smi_mig: str | None = None  # a pasted nvidia-smi table with MIG mode enabled
    prose_ranks: set[int] = field(default_factory=set)  # ranks the reporter's sentences name
    pair_named: bool = False  # "both processes" / "both ranks"
    versions: Versions = field(default_factory=Versions)  # driver / CUDA / NCCL versions named
    mig_requested: int = 0  # MIG instances a pod requests (nvidia.com/mig-3g.20gb: 2)
    gpu_uuids: int = 0  # distinct GPU- UUIDs in the input (what a container's nvidia-smi shows)
    local_ranks: int = 0  # the most ranks NCCL counted on one node (``localRanks N``)
    # (local rank, world size) of DeepSpeed's MPI discovery: the highest local rank it printed
    mpi_local: tuple[int, int] = (0, 0)
    # the paste sets CUDA_VISIBLE_DEVICES spelled right somewhere (a misspelled one is then history)
    cvd_spelled: bool = False
    # every CUDA_VISIBLE_DEVICES=<digits> value the text sets, in order (at most 16)
    visible_lists: list[str] = field(default_factory=list)
    # an nvidia-smi process table with one compute process on each of several GPUs (a sighting of
    # ranks spread over their GPUs; display processes left out)
    spread: str = ""
    # the GPUs an nvidia-smi process table shows compute processes on
    proc_gpus: set[int] = field(default_factory=set)
    smi_told: set[int] = field(default_factory=set)  # "nvidia-smi shows the load on GPU 2 and 3"
    nccl_nvml: set[int] = field(default_factory=set)  # NVML indices of NCCL's Init lines
    # code that sets CUDA_VISIBLE_DEVICES after a call that initialised CUDA (where, the line)
    cvd_after_cuda: str = ""
    # ROCR_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES set within a few lines of each other (one run)
    rocr_hip_together: bool = False
    # the GPUs one engine command asks for on its node (tensor x pipeline x data parallel), where
    # a command gives a parallel size and names no other node
    engine_gpus: int = 0
    nccl_nodes: int = 0  # the fewest nodes NCCL counted in a communicator (``nNodes N``; 0: none)
    one_machine: bool = False  # the prose says the job runs on one machine ("a single node")
    gpus_requested: int | None = None  # docker --gpus N / device=a,b, NV_GPU, a pod's GPU limit
    # (visible GPUs, tensor-parallel size) of one pasted one-node command that sets both
    parallel_visible: list[tuple[str, int]] = field(default_factory=list)
    job_gpus: tuple[int, str] | None = None  # "4卡训练": a job's count, where no machine's is told
    title_line: int | None = None  # the line of the paste's title (a heading in its first lines)
    prose_read: int = 0  # prose characters the prose-only signals read so far (PROSE_SIGNAL_LIMIT)
    container_runs: list[str] = field(default_factory=list)  # docker/podman run commands
    # {variable: {rank: value}}: visible-devices lists the ranks print (explain/printed_lists.py)
    rank_lists: dict[str, dict[int, str]] = field(default_factory=dict)
    rank_devices: dict[int, int] = field(default_factory=dict)  # {rank: the device it reports}
    # (first, last) line of every prose segment: a message quoted there is mentioned, not printed
    prose_spans: list[tuple[int, int]] = field(default_factory=list)

    def quoted(self, sid: str) -> str:
        """The first hit of signal ``sid`` as a quote (``source:line: text``)."""
        hit = self.hits[sid]
        return f"{hit.where}: {hit.excerpt}"

    def machines_told(self) -> int:
        """The machines the input says the job spans besides a launch line's own count: the
        prose ("2 machines"; "multi-node" words: at least 2), an MPI host list, a pasted config
        (0: not said)."""
        several = 2 if "multi-node" in self.hits else 0
        return max(
            self.stated_machines, self.hosts_in_launch, config_machines(self.configs), several
        )

    def tells_several_processes(self) -> bool:
        """The text shows a job of several processes: a launcher, DDP or rank word (the
        catalogue's ``multi-process-job``; the launchers are among its words) or ranks the
        reporter names. Where it does not, a device a snippet hard-codes is one program's choice
        and the processes an OOM lists are anyone's."""
        return "multi-process-job" in self.hits or bool(self.prose_ranks)

    def shows_one_program(self) -> bool:
        """The writer describes the run (a sentence of their own, or a plain ``python
        script.py`` they ran) and nothing in the text points at a job of several processes: no
        launcher, DDP or rank word, no count of processes (an engine's parallel size over two
        GPUs counts), no framework that runs a worker per GPU (Ray, dask-cuda, JAX's distributed
        runtime, Horovod, MPI, Slurm tasks, accelerate, DeepSpeed, Lightning), no shell script
        whose launch is not shown. A bare log says neither: the launch is often all that shows
        a job's size."""
        several = not SEVERAL_PROCESS_WORDS.isdisjoint(self.hits)
        counted = max(self.stated_procs or 0, self.engine_gpus)  # an engine: a worker per GPU
        told = self.tells_several_processes() or several or counted >= 2
        plain_run = any(plain_python_run(c) for c in self.commands)
        return (self.described or plain_run) and not told

    def fixed_device_of_one_program(self) -> bool:
        """The pasted code hard-codes a device and the text shows no job of several processes:
        one program's choice, no rank piles onto it (b27 dev: ``cuda:1`` on a one-GPU machine)."""
        return self.code_kind == "constant" and not self.tells_several_processes()

    def shows_mig(self) -> bool:
        """The text shows MIG: an nvidia-smi table in MIG mode, a pod's MIG request, or a MIG
        signal (UUIDs, profiles, MIG mode, the word)."""
        mig_signals = (
            "mig-uuid",
            "mig-profile",
            "mig-mode",
            "mig-word",
            "mig-caps",
            "k8s-mig-resource",
        )
        return bool(self.smi_mig or self.mig_requested or set(mig_signals) & set(self.hits))

    def cvd_entries(self) -> list[str]:
        """The entries of the CUDA_VISIBLE_DEVICES the paste sets (``[""]`` when it sets none)."""
        return self.env.get("CUDA_VISIBLE_DEVICES", "").replace(" ", "").split(",")

    @property
    def cuda_error_named(self) -> bool:
        """Whether NCCL's own warning names the CUDA error of a failed call (``Cuda failure 'out
        of memory'``): the failure is that error, not a GPU NCCL could not reach."""
        return "nccl-cuda-failure-named" in self.hits

    def shows_outside(self, *, own: bool = False, printed: bool = False) -> bool:
        """Whether the input shows a failure outside this family (an OOM, a model too big, a
        data-loader crash, a Python error, a network timeout). ``own``: a failure of its own,
        not the network errors the other ranks print once one rank is gone (a store reset, a
        socket timeout); ``printed``: in the job's output, not told in the reporter's sentences
        ("earlier we had an OOM")."""
        return bool(self.outside_hits(own=own, printed=printed))

    def outside_hits(self, *, own: bool = False, printed: bool = False) -> list[Hit]:
        """The hits of failures outside this family, first found first (see
        :meth:`shows_outside` for ``own`` and ``printed``)."""
        return [
            h
            for h in self.hits.values()
            if h.signal.outside
            and not (own and h.signal.id.startswith("outside-network"))
            and not (printed and h.segment == "prose")
        ]

    def in_prose(self, lineno: int) -> bool:
        """Whether line ``lineno`` (1-based) of the document is the reporter's prose."""
        return any(a <= lineno <= b for a, b in self.prose_spans)


def in_title(facts: DocFacts, hit: Hit) -> bool:
    """Whether the hit is on the paste's title line."""
    return facts.title_line is not None and hit.where.endswith(f":{facts.title_line}")
