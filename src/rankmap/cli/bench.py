"""``rankmap bench``: all-reduce / all-gather / reduce-scatter / broadcast bandwidth sweep.

Run it under a launcher (``torchrun --nproc-per-node N -m rankmap bench``); rank 0 prints the
nccl-tests-like table (or ``--json``), every rank exits with the same status.
"""

from __future__ import annotations

import argparse
from typing import Any

from rankmap.bench.link import LinkBandwidth, share, theoretical_bandwidth
from rankmap.bench.sizes import (
    DTYPE_SIZES,
    OPS,
    BenchResult,
    avg_busbw,
    below_min,
    format_size,
    parse_size,
    sweep,
    table_header,
    table_row,
)
from rankmap.cli.common import add_json, non_negative, positive_seconds
from rankmap.cli.context import AppContext
from rankmap.findings import Finding, Report, finding
from rankmap.status import ExitStatus


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "bench",
        help="collective bandwidth sweep like nccl-tests (run under torchrun)",
        description="Measure a collective over a range of sizes like nccl-tests' "
        "all_reduce_perf: time, algbw, busbw and #wrong per size, then the average bus "
        "bandwidth. Run under a launcher: torchrun --nproc-per-node N -m rankmap bench.",
    )
    parser.add_argument("-b", "--minbytes", default="1K", help="smallest size (default 1K)")
    parser.add_argument("-e", "--maxbytes", default="4M", help="largest size (default 4M)")
    parser.add_argument("-f", "--stepfactor", type=int, default=2, help="size factor (default 2)")
    parser.add_argument("-w", "--warmup-iters", type=int, default=5, help="untimed iterations")
    parser.add_argument("-n", "--iters", type=int, default=20, help="timed iterations per size")
    parser.add_argument("--op", choices=OPS, default="all_reduce")
    parser.add_argument(
        "--backend", choices=("nccl", "gloo"), help="default: nccl with CUDA, else gloo"
    )
    parser.add_argument("--dtype", choices=sorted(DTYPE_SIZES), default="float32")
    parser.add_argument(
        "--min-busbw",
        type=non_negative,
        metavar="GB/S",
        help="fail (exit 1) when the average bus bandwidth is below 0.9 x this",
    )
    parser.add_argument(
        "--machine",
        "-m",
        metavar="NAME|PATH",
        help="profile with topology to take the theoretical link bandwidth from (default NVML)",
    )
    parser.add_argument(
        "--timeout",
        type=positive_seconds,
        default=300.0,
        help="process-group timeout in seconds",
    )
    add_json(parser)


def _validate(args: argparse.Namespace) -> list[int]:
    from rankmap.errors import UsageError

    if args.iters < 1 or args.warmup_iters < 0:
        raise UsageError("-n must be at least 1 and -w at least 0")
    return sweep(parse_size(args.minbytes), parse_size(args.maxbytes), args.stepfactor)


def _local_link(args: argparse.Namespace, ctx: AppContext, world: Any) -> LinkBandwidth | None:
    """Theoretical bandwidth of this rank's GPU, from the profile or NVML."""
    if world.device.type != "cuda":
        return None
    if args.machine:
        from rankmap.inventory import load_machine
        from rankmap.topology import host_topology
        from rankmap.visibility import resolve_visible

        host = load_machine(args.machine, ctx.files)[0]
        topo = host_topology(host)
        visible = resolve_visible(host, ctx.environ).devices
        if topo is None or world.local_rank >= len(visible):
            return None
        loc = topo.gpu(visible[world.local_rank].nvml_index)
        return theoretical_bandwidth(loc) if loc else None
    from rankmap.adapters.torch_bench import device_locality

    loc = device_locality(world)
    return theoretical_bandwidth(loc) if loc else None


def _findings(results: list[BenchResult], avg: float, min_busbw: float | None) -> list[Finding]:
    out = []
    if below_min(avg, min_busbw):
        out.append(
            finding(
                "RM993",
                f"average bus bandwidth {avg:.3f} GB/s is below 0.9 x {min_busbw} GB/s",
                detail=f"--min-busbw {min_busbw}: the run fails below {0.9 * (min_busbw or 0):.3f}"
                " GB/s (nccl-tests' NCCL_TESTS_MIN_BW rule).",
                severity="error",
            )
        )
    bad = [r for r in results if r.wrong]
    if bad:
        sizes = ", ".join(f"{r.size} B: {r.wrong}" for r in bad[:8])
        out.append(finding("RM994", f"{bad[0].op} returned wrong results", detail=sizes))
    return out


def _progress(args: argparse.Namespace, ctx: AppContext, lead: bool) -> Any:
    """Per-size callback: table rows on stdout, or progress lines on stderr with --json."""

    def show(result: BenchResult) -> None:
        if not lead:
            return
        if args.json:  # progress only; the JSON document comes at the end
            ctx.stderr.write(
                f"rankmap bench: {format_size(result.size)} {result.op} "
                f"{result.time_us:.1f} us, busbw {result.busbw:.3f} GB/s\n"
            )
            ctx.stderr.flush()
        else:
            ctx.stdout.write(table_row(result) + "\n")
            ctx.stdout.flush()

    return show


def _measure(
    args: argparse.Namespace, ctx: AppContext
) -> tuple[Any, Any, list[BenchResult], LinkBandwidth | None]:
    """(config, world, results, link): the sweep, run inside this rank."""
    from rankmap.adapters.torch_bench import BenchConfig, close_world, init_world, run_sweep

    sizes = _validate(args)
    config = BenchConfig(
        args.op, tuple(sizes), args.dtype, args.backend, args.warmup_iters, args.iters, args.timeout
    )
    world = init_world(config.backend, ctx.environ, config.timeout_s)
    try:
        if world.rank == 0 and not args.json:
            ctx.stdout.write(
                f"# rankmap bench: {config.op}, {world.size} rank(s), backend {world.backend}, "
                f"dtype {config.dtype}, warmup {config.warmup}, iters {config.iters}\n"
            )
            ctx.stdout.write("\n".join(table_header(config.op)) + "\n")
            ctx.stdout.flush()
        results = run_sweep(config, world, _progress(args, ctx, world.rank == 0))
        link = _local_link(args, ctx, world)
    finally:
        close_world(world)
    return config, world, results, link


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.cli.common import quiet_torch_import_warnings

    quiet_torch_import_warnings()
    if args.machine:  # a bad --machine is exit 2 before torch starts, on CPU too
        from rankmap.inventory import load_machine

        load_machine(args.machine, ctx.files)
    config, world, results, link = _measure(args, ctx)
    avg = avg_busbw(results)
    report = Report(command="bench", findings=_findings(results, avg, args.min_busbw))
    link_share = share(avg, link)
    report.sections.update(
        {
            "op": config.op,
            "backend": world.backend,
            "world_size": world.size,
            "dtype": config.dtype,
            "results": [r.to_dict() for r in results],
            "avg_busbw": round(avg, 6),
            "min_busbw": args.min_busbw,
            "link": None
            if link is None
            else {"description": link.description, "gbps": link.gbps, "share": link_share},
        }
    )
    status = int(ExitStatus.FINDINGS if report.has_errors else ExitStatus.OK)
    if world.rank != 0:
        return status
    if args.json:
        from rankmap.render.json import report_json

        ctx.stdout.write(report_json(report))
    else:
        from rankmap.render.bench import render_bench_tail

        render_bench_tail(report, ctx, avg, link, link_share)
    ctx.stdout.flush()
    return status
