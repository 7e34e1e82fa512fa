"""``rankmap doctor``: this machine (or a simulated one) and this shell, diagnosed.

Environment rules (docs/doctor.md):

* without ``--machine``: NVML inventory, the real environment with ``--env`` values on top,
  identity/container/versions read from this machine and this Python;
* with ``--machine``: a simulation - the profile (or pasted nvidia-smi) is the machine, the
  environment is *only* the ``--env`` values, identity comes from the profile, and this Python's
  torch/NCCL are not consulted; ``--inherit-env`` adds this shell's environment and this Python's
  versions back.

Ports: ``ctx.inventory_source() -> (Host | None, [Finding])`` replaces NVML and
``ctx.system_facts() -> SystemFacts`` replaces identity/version collection (tests, dry runs).
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

from rankmap.cli.common import add_env, add_json, add_machine, emit
from rankmap.cli.context import AppContext
from rankmap.errors import InputError, UnavailableError
from rankmap.render.doctor import render_doctor


def register(sub: Any) -> None:
    """Add the ``doctor`` subcommand."""
    parser = sub.add_parser(
        "doctor",
        help="this machine + this shell: GPUs, CUDA_VISIBLE_DEVICES view, env, versions",
        description="Show the GPU inventory, what a process with this environment sees "
        "(logical -> physical), launcher/NCCL/CUDA variables, host identity, container, versions "
        "and findings. With --machine, simulate a machine instead of reading NVML.",
    )
    add_json(parser)
    add_machine(parser, repeatable=False)
    add_env(parser)
    parser.add_argument(
        "--inherit-env",
        action="store_true",
        help="with --machine: also use this shell's environment and this Python's versions",
    )
    parser.add_argument(
        "--host", metavar="NAME", help="with a multi-host profile: the host to diagnose"
    )
    parser.epilog = "--machine - reads pasted nvidia-smi output (or a profile) from stdin."
    parser.add_argument(
        "--save",
        metavar="PATH",
        help="write the inventory as profile JSON (loads back with --machine PATH)",
    )


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    """Collect facts, build the report, emit it (and save the profile when asked)."""
    from rankmap.doctor.engine import build_report
    from rankmap.envspec import parse_env_assignments

    overrides = parse_env_assignments(args.env)
    facts = _machine_facts(args, ctx, overrides) if args.machine else _live_facts(ctx, overrides)
    report = build_report(facts)
    if args.save:
        _save(args.save, facts.host, ctx)
    return emit(report, ctx, as_json=args.json, render_text=render_doctor)


def _system_facts(ctx: AppContext) -> Any:
    if ctx.system_facts is not None:
        return ctx.system_facts()
    from rankmap.adapters.system import collect_host_identity
    from rankmap.adapters.versions import collect_python_versions
    from rankmap.doctor.engine import SystemFacts

    return SystemFacts(collect_host_identity(ctx.environ), collect_python_versions())


def _with_host_versions(versions: Any, host: Any) -> Any:
    if host is None:
        return versions
    return replace(
        versions, driver_version=host.driver_version, cuda_driver_version=host.cuda_driver_version
    )


def _live_facts(ctx: AppContext, overrides: dict[str, str]) -> Any:
    from rankmap.doctor.engine import DoctorFacts
    from rankmap.envspec import effective_env

    host, findings = ctx.local_host()
    env = effective_env(ctx.environ, overrides)
    system = _system_facts(ctx)
    identity = replace(system.identity, nccl_hostid=env.get("NCCL_HOSTID") or None)
    if host is not None:
        host = replace(host, identity=identity, hostname=identity.hostname or host.hostname)
        if host.source == "nvml":  # inside a container NVML sees only the injected GPUs
            host = replace(host, view="container" if identity.container else "host")
    return DoctorFacts(
        host=host,
        env=env,
        identity=identity,
        versions=_with_host_versions(system.versions, host),
        inventory_findings=tuple(findings),
        source=host.source if host is not None else "none",
        inventory_notes=_gpu_notes(host),
    )


def _machine_facts(args: argparse.Namespace, ctx: AppContext, overrides: dict[str, str]) -> Any:
    from rankmap.adapters.versions import Versions
    from rankmap.doctor.engine import DoctorFacts
    from rankmap.envspec import effective_env
    from rankmap.inventory import load_machine

    spec = args.machine
    if spec == "-":  # `nvidia-smi | rankmap doctor --machine -`
        from rankmap.adapters.files import read_stdin
        from rankmap.inventory import parse_machine_text

        text = read_stdin(ctx.stdin, kind="machine", what="--machine -")
        if not text.strip():
            raise InputError("--machine -: nothing on stdin")
        hosts = parse_machine_text(text, source="stdin")
    else:
        if not ctx.files.exists(Path(spec)) and ctx.files.is_file(ctx.cwd / spec):
            spec = str(ctx.cwd / spec)
        hosts = load_machine(spec, ctx.files)
    notes: list[str] = []
    if args.host:
        chosen = [h for h in hosts if h.hostname == args.host]
        if not chosen:
            names = ", ".join(h.hostname for h in hosts)
            raise InputError(f"--host {args.host!r}: not in {args.machine} (hosts: {names})")
        host = chosen[0]
    else:
        host = hosts[0]
        if len(hosts) > 1:
            notes.append(
                f"{args.machine} describes {len(hosts)} hosts; showing {host.hostname} "
                "(choose with --host)."
            )
    env = effective_env(ctx.environ, overrides, use_base=args.inherit_env)
    versions = _system_facts(ctx).versions if args.inherit_env else Versions()
    identity = host.identity
    if identity.hostname is None:
        identity = replace(identity, hostname=host.hostname)
    identity = replace(identity, nccl_hostid=env.get("NCCL_HOSTID") or identity.nccl_hostid)
    host = replace(host, identity=identity)
    return DoctorFacts(
        host=host,
        env=env,
        identity=identity,
        versions=_with_host_versions(versions, host),
        simulated=True,
        source=host.source,
        inventory_notes=tuple(notes) + _gpu_notes(host),
    )


def _gpu_notes(host: Any) -> tuple[str, ...]:
    if host is None:
        return ()
    notes = []
    for gpu in host.gpus:
        for err in gpu.errors:
            notes.append(f"GPU {gpu.nvml_index}: {err}")
    return tuple(dict.fromkeys(notes))


def _save(path: str, host: Any, ctx: AppContext) -> None:
    from rankmap.inventory.profile import dump_profile
    from rankmap.model import Inventory

    if host is None:
        raise UnavailableError(
            "--save: there is no GPU inventory to save (NVML is not available)",
            hint="run on the GPU node, or convert pasted nvidia-smi output with --machine FILE",
        )
    target = Path(path) if Path(path).is_absolute() else ctx.cwd / path
    text = dump_profile(
        Inventory((host,)),
        name=host.hostname,
        description=f"saved by rankmap doctor from {host.source or 'nvml'}",
    )
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--save {path!r}: cannot write: {exc.strerror}") from None
    ctx.stderr.write(f"rankmap: saved profile to {path} (use it with --machine {path})\n")
