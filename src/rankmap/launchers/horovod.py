"""``horovodrun``: Horovod's launcher (horovod/runner/launch.py).

``-np N`` processes over ``-H host:slots,...`` (default ``localhost:N``) or ``--hostfile``
(``host slots=N`` lines); hosts are filled in order, and more processes than slots is an error
("Requested more processes than there are available slots", horovod/runner/common/util/hosts.py).
The Gloo controller gives each process ``HOROVOD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE/CROSS_RANK/
CROSS_SIZE/HOSTNAME`` (horovod/common/gloo/gloo_context.cc reads them); the MPI controller runs
``mpirun``, which sets Open MPI's variables. Which controller runs without ``--gloo``/``--mpi``
depends on how Horovod was built (MPI when built with it): both sets are given then, so that no
unknown build is predicted to fail. Neither sets LOCAL_RANK or CUDA_VISIBLE_DEVICES; scripts use
``hvd.local_rank()``.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankmap.errors import UsageError
from rankmap.launchers import LaunchContext, LaunchPlan, check_size
from rankmap.launchers.command import parse_command
from rankmap.launchers.mpi import OMPI_VARS, parse_mpi_hostfile, ranks_in_order
from rankmap.launchers.options import OptSpec, parse_options
from rankmap.numbers import parse_int

# horovodrun's options that take no value (store_true and the override true/false actions)
_FLAGS = (
    "disable_cache",
    "verbose",
    "check_build",
    "gloo",
    "mpi",
    "jsrun",
    "tcp",
    "hierarchical_allreduce",
    "no_hierarchical_allreduce",
    "hierarchical_allgather",
    "no_hierarchical_allgather",
    "autotune",
    "no_autotune",
    "timeline_mark_cycles",
    "no_timeline_mark_cycles",
    "no_stall_check",
    "stall_check",
    "mpi_threads_disable",
    "no_mpi_threads_disable",
    "log_with_timestamp",
    "log_without_timestamp",
    "prefix_output_with_timestamp",
    "log_hide_timestamp",
    "no_log_hide_timestamp",
)
_VALUES = (
    "num_proc",
    "start_timeout",
    "network_interfaces",
    "network_interface",
    "output_filename",
    "config_file",
    "ssh_port",
    "ssh_identity_file",
    "fusion_threshold_mb",
    "cycle_time_ms",
    "cache_capacity",
    "autotune_log_file",
    "autotune_warmup_samples",
    "autotune_steps_per_sample",
    "autotune_bayes_opt_max_samples",
    "autotune_gaussian_process_noise",
    "min_num_proc",
    "max_num_proc",
    "min_np",
    "max_np",
    "slots_per_host",
    "elastic_timeout",
    "reset_limit",
    "timeline_filename",
    "stall_check_warning_time_seconds",
    "stall_check_shutdown_time_seconds",
    "mpi_args",
    "binding_args",
    "num_nccl_streams",
    "thread_affinity",
    "gloo_timeout_seconds",
    "log_level",
    "hosts",
    "hostfile",
    "host_discovery_script",
)
SPEC = OptSpec(
    prog="horovodrun",
    takes_value={**dict.fromkeys(_FLAGS, False), **dict.fromkeys(_VALUES, True)},
    short={
        "-np": "num_proc",
        "-H": "hosts",
        "-hostfile": "hostfile",
        "-p": "ssh_port",
        "-i": "ssh_identity_file",
        "-cb": "check_build",
        "-v": "verbose",
        "-prefix-timestamp": "prefix_output_with_timestamp",
    },  # fmt: skip
    strict=False,
    guess_values=True,
)
# what gloo_context.cc reads, and the counts they carry (mpi.ranks_in_order)
GLOO_VARS = (
    ("HOROVOD_RANK", "rank"),
    ("HOROVOD_SIZE", "world"),
    ("HOROVOD_LOCAL_RANK", "local_rank"),
    ("HOROVOD_LOCAL_SIZE", "local_size"),
    ("HOROVOD_CROSS_RANK", "node"),
    ("HOROVOD_CROSS_SIZE", "nodes"),
)


def simulate(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """Plan of ``horovodrun -np N [-H h:s,...|--hostfile F] [--gloo|--mpi] PROGRAM ...``."""
    p = parse_options(list(argv[1:]), SPEC)
    if not p.rest:
        raise UsageError("horovodrun: no program given", hint="horovodrun -np 4 python train.py")
    np_text = p.get("num_proc")
    if np_text is None:
        raise UsageError("horovodrun: -np is required", hint="horovodrun -np 4 python train.py")
    world = parse_int(np_text, "horovodrun: -np")
    if world < 1:
        raise UsageError(f"horovodrun: -np must be >= 1, got {world}")
    check_size(world, "horovodrun: -np")
    hosts = _hosts(p.get("hosts"), p.get("hostfile"), world, ctx)
    layout = _layout(hosts, world)
    controllers = [c for c in ("gloo", "mpi") if p.flag(c)] or ["gloo", "mpi"]
    variables = (GLOO_VARS if "gloo" in controllers else ()) + (
        OMPI_VARS if "mpi" in controllers else ()
    )
    procs = ranks_in_order(layout, variables)
    inner = parse_command(p.rest, {})
    machines = ctx.hosts(len(layout))
    return LaunchPlan(
        launcher="horovodrun",
        nnodes=len(layout),
        nproc_per_node=max(layout),
        procs=tuple(procs),
        script=next((t for t in inner.argv if t.endswith(".py")), None),
        notes=(
            f"horovodrun: {world} process(es) over {len(layout)} host(s) {layout} "
            f"({' or '.join(controllers)} controller).",
        ),
        sets_local_rank=False,
        node_env={n: dict(inner.assigned) for n in range(len(layout))},
        argv=tuple(argv),
        hosts=tuple(machines),
        fix_hints={
            "local_var": "HOROVOD_LOCAL_RANK"
            if controllers == ["gloo"]
            else "OMPI_COMM_WORLD_LOCAL_RANK"
        },  # fmt: skip
    )


def _hosts(
    hosts: str | None, hostfile: str | None, world: int, ctx: LaunchContext
) -> list[tuple[str, int]]:
    """(host, slots) in order: -H, else the hostfile, else ``localhost:<np>``."""
    if hostfile:
        listed = parse_mpi_hostfile(ctx.read(hostfile, "hostfile"), hostfile)
        return [(name, slots or 1) for name, slots in listed]
    if not hosts:
        return [("localhost", world)]
    out: list[tuple[str, int]] = []
    for item in hosts.split(","):
        name, _, slots = item.strip().partition(":")
        if not name:
            raise UsageError(f"horovodrun: -H {hosts!r}: expected host:slots,host:slots")
        count = parse_int(slots, f"horovodrun: -H {name}: slots") if slots else 1
        if count < 1:
            raise UsageError(f"horovodrun: -H {name}: slots must be >= 1, got {count}")
        out.append((name, count))
    return out


def _layout(hosts: Sequence[tuple[str, int]], world: int) -> list[int]:
    """Processes per host, hosts filled in order; more processes than slots is refused."""
    slots = sum(s for _, s in hosts)
    if world > slots:
        raise UsageError(
            f"horovodrun: requested {world} processes but the hosts have {slots} slot(s)",
            hint="give every host as many slots as GPUs (-H host1:4,host2:4) and -np <= their sum",
        )
    layout: list[int] = []
    left = world
    for _, s in hosts:
        if left <= 0:
            break
        layout.append(min(s, left))
        left -= layout[-1]
    return layout
