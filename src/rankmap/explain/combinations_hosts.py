"""Combinations about hosts (:mod:`rankmap.explain.combinations`): machines taken for one host
(a transport, NCCL's node count, DeepSpeed's MPI discovery, one hostname), ranks on one GPU
across machines, and the nvidia-smi process tables that show where processes run.
"""

from __future__ import annotations

from rankmap.explain.context import Context
from rankmap.explain.docfacts import DocFacts
from rankmap.explain.score_model import PT_SECTION, Scores
from rankmap.findings import Finding

# What shows more than one machine or container: only then can one hostname join two of them.
_SEVERAL_HOSTS = frozenset(
    {"multi-node", "two-pods-one-node", "docker-word", "docker-gpus", "inside-container",
     "k8s-gpu-resource", "device-plugin"}
)  # fmt: skip


def localhost_on_one_machine(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """A hostname of localhost is a host-identity problem only where several machines or
    containers could share it (nccl.md (b)); on one machine with no container it is harmless."""
    if doc is None or "hostname-localhost" not in doc.hits:
        return
    nodes = max(ctx.launch.nnodes or 0 if ctx.launch else 0, doc.hosts_in_launch)
    if nodes >= 2 or _SEVERAL_HOSTS & set(doc.hits):
        return
    weight = dict(doc.hits["hostname-localhost"].signal.supports).get("host_identity", 0.0)
    s.add(
        "host_identity",
        -weight,
        "one machine and no container in the input: a hostname of localhost joins nothing "
        "(reference/nccl.md (b))",
    )


# Finding codes of ranks sharing one GPU (the duplicate-GPU causes and their symptom RM103).
_SHARED_GPU = frozenset({"RM103", "RM101", "RM201", "RM301", "RM302", "RM401", "RM601", "RM801",
                         "RM503", "RM904"})  # fmt: skip


# What gives machines one name: a container on the host network or given a hostname, a hostname
# of localhost, the same hostname said outright.
_ONE_NAME = frozenset({"host-network", "hostname-localhost", "same-hostname"})


def duplicate_across_hosts(
    ctx: Context, doc: DocFacts | None, s: Scores, base: list[Finding]
) -> None:
    """Ranks on one GPU in a job of several machines: NCCL compares GPUs only among ranks of one
    host hash (reference/nccl.md (b)), so with one process per machine the pair is on two
    machines taken for one; with several, a name the machines share makes it likely."""
    if not base or base[0].code not in _SHARED_GPU:
        return
    launch = ctx.launch
    nodes = max(launch.nnodes or 0 if launch else 0, doc.hosts_in_launch if doc else 0)
    # a launch line that could not be simulated (no script named) still says its counts
    per_node = (
        (doc.slots_per_host if doc else None)
        or (launch.nproc_per_node if launch else None)
        or (doc.stated_procs if doc else None)
    )
    if per_node == 1 and nodes >= 2:
        s.add(
            "host_identity",
            5.0,
            f"one process per machine on {nodes} machines, yet two ranks on one GPU: NCCL took "
            "two machines for one host (reference/nccl.md (b))",
        )
        return
    several = nodes >= 2 or bool(doc and "multi-node" in doc.hits)
    named = sorted(_ONE_NAME & set(doc.hits)) if doc else []
    if several and named:
        s.add(
            "host_identity",
            # the same name said outright (not only a setting that may give one): as strong as
            # one process per machine (reviews 49, 51)
            5.0 if "same-hostname" in named else 3.0,
            f"ranks on one GPU in a job of several machines that may share one name ({named[0]}): "
            "NCCL compares GPUs among ranks of one host hash (reference/nccl.md (b))",
            doc.quoted(named[0]) if doc else None,
        )


def transport_and_tables(ctx: Context, doc: DocFacts | None, s: Scores) -> None:
    """Several hosts yet an intra-host transport; nvidia-smi process tables."""
    if doc and doc.hosts_in_launch >= 2 and "p2p-ipc" in doc.hits and _one_rank_per_node(ctx, doc):
        s.add(
            "host_identity",
            5.0,
            f"the launch names {doc.hosts_in_launch} hosts, yet NCCL connected ranks through an "
            "intra-host transport (P2P/IPC or SHM): it took them for one host",
            doc.hits["p2p-ipc"].where + ": " + doc.hits["p2p-ipc"].excerpt,
        )
    if doc and (merged := _nodes_merged(ctx, doc) or _mpi_hosts_merged(ctx, doc)):
        s.add("host_identity", 5.0, merged)
    if doc and doc.gpu0_extra:
        s.mapping_failure = True  # a process on GPU 0 and on its own GPU: an observed state
        s.add(
            "no_set_device",
            5.0,
            f"nvidia-smi: {doc.gpu0_extra}: it created a CUDA context on cuda:0 before (or "
            f"without) selecting its own device ({PT_SECTION})",
            doc.gpu0_quote,
        )
    if doc and doc.every_gpu and not doc.gpu0_extra:
        s.mapping_failure = True  # an observed state, like a process on GPU 0 and its own
        s.add(
            "no_set_device",
            5.0,
            f"nvidia-smi: {doc.every_gpu}: no process selected a GPU of its own ({PT_SECTION}; "
            "TensorFlow maps memory on every GPU it sees, https://www.tensorflow.org/guide/gpu; "
            "JAX uses every local GPU unless local_device_ids is given, "
            "https://docs.jax.dev/en/latest/_autosummary/jax.distributed.initialize.html)",
            doc.every_gpu_quote,
        )
    if doc and doc.shared_gpu and not doc.gpu0_extra:
        s.failure = s.mapping_failure = True  # several processes on one GPU: this family's symptom
        for cat, pts in (
            ("no_set_device", 2.0),
            ("oversubscribed", 1.0),
            ("container_mapping", 1.0),
        ):
            s.add(cat, pts, f"{doc.shared_gpu} (several ranks on one GPU)")


def _nodes_merged(ctx: Context, doc: DocFacts) -> str | None:
    """NCCL's ``nNodes 1 localRanks 16`` for a launch over two nodes of 8: it took the nodes for
    one host (reference/nccl.md (b): ranks of one host hash are one node); None otherwise."""
    nodes = max(ctx.launch.nnodes or 0 if ctx.launch else 0, doc.hosts_in_launch)
    nproc = ctx.launch.nproc_per_node if ctx.launch else doc.stated_procs
    if not nodes and doc.stated_machines >= 2 and not nproc:
        # "2 machines, 8 GPUs each": the prose's count, with the GPUs it gives one machine
        nodes, nproc = doc.stated_machines, doc.stated_gpus
        if not nproc and doc.local_ranks >= nodes:
            # "two different servers": NCCL's one node holds every rank of the job
            nproc = doc.local_ranks // nodes
    if doc.nccl_nodes != 1 or nodes < 2 or not nproc or doc.local_ranks <= nproc:
        return None
    return (
        f"NCCL counted one node with {doc.local_ranks} local ranks (nNodes 1) for a job over "
        f"{nodes} machines of {nproc} process(es) each: it took the machines for one host"
    )


def _mpi_hosts_merged(ctx: Context, doc: DocFacts) -> str | None:
    """DeepSpeed's MPI discovery printed a local rank at least the GPUs of one machine (stated,
    in an nvidia-smi table, or the processes per node of the launch), in a job bigger than that:
    it counts local ranks per host name (deepspeed/comm/comm.py ``mpi_discovery``, "assuming
    hostnames are unique"), so machines that share one hostname count as one (review 59)."""
    local, world = doc.mpi_local
    machines = max(doc.hosts_in_launch, ctx.launch.nnodes or 0 if ctx.launch else 0)
    if machines < 2 and "multi-node" not in doc.hits:
        return None  # one machine: a local rank past its GPUs is more processes than GPUs
    # (or the slots an MPI host list gives each host: "-H a:4,b:4", review 69)
    per_node = ctx.gpus_per_node() or doc.smi_gpus or doc.stated_gpus or doc.slots_per_host
    if per_node is None and ctx.launch and ctx.launch.nproc_per_node:
        per_node = ctx.launch.nproc_per_node
    if not per_node or local < per_node or world <= per_node:
        return None
    return (
        f"DeepSpeed's MPI discovery gave a process local_rank={local} in a {world}-process job "
        f"on machines of {per_node} GPUs: it counts local ranks per host name, so the machines "
        "share one hostname (deepspeed/comm/comm.py mpi_discovery)"
    )


def _one_rank_per_node(ctx: Context, doc: DocFacts) -> bool:
    """Whether each host runs a single rank, so that a P2P/IPC or SHM connection between two
    ranks can only join ranks of different hosts: with several ranks per node (the launch's
    processes per node, NCCL's ``localRanks``) the intra-host transport is expected."""
    nproc = ctx.launch.nproc_per_node if ctx.launch else None
    # positive evidence only: a launch of one process per node, or NCCL's "localRanks 1"; an
    # unknown count is no single rank (review 66: rank 0 -> 1 via P2P/IPC on one host of a
    # 2-node job read as two hosts taken for one)
    return (nproc == 1 and doc.local_ranks <= 1) or (nproc is None and doc.local_ranks == 1)
