"""The script points the rendezvous somewhere the launcher does not serve (RM906).

Facts (reference/pytorch_nccl.md §7.1, launchers.md §2): under torchrun every worker is a
*client* of the store torchrun's agent hosts (``TORCHELASTIC_USE_AGENT_STORE=True``), at the
``MASTER_ADDR``/``MASTER_PORT`` torchrun gives it; ``init_process_group`` with ``env://`` reads
those two variables. A script that overwrites them with constants before that call sends every
rank to an address where no store listens - unless it is the one torchrun serves - and the
rendezvous times out (``The client socket has timed out after ... while trying to connect to
(127.0.0.1, 12345)``). Which port torchrun serves is :attr:`LaunchPlan.store_port` (modelled on
torch 2.13, see :func:`rankmap.launchers.torchrun.worker_store_port`).
"""

from __future__ import annotations

from rankmap.check.script_rendezvous import RendezvousWrite
from rankmap.check.script_scan import DeviceSelection
from rankmap.findings import Finding, finding
from rankmap.launchers import LaunchPlan

_LOOPBACK = ("localhost", "127.", "::1", "[::1]", "0.0.0.0")


def rendezvous_findings(plan: LaunchPlan, sel: DeviceSelection) -> list[Finding]:
    """RM906 where a constant MASTER_PORT/MASTER_ADDR write cannot reach torchrun's store."""
    if plan.store_port is None or not sel.rendezvous_writes:
        return []
    port = _last(sel.rendezvous_writes, "MASTER_PORT")
    addr = _last(sel.rendezvous_writes, "MASTER_ADDR")
    wrong_port = port is not None and port.value != plan.store_port
    wrong_addr = addr is not None and plan.nnodes > 1 and addr.value.startswith(_LOOPBACK)
    if not (wrong_port or wrong_addr):
        return []
    bad = [w for w, on in ((port, wrong_port), (addr, wrong_addr)) if w is not None and on]
    served = f"port {plan.store_port}" if plan.store_port else "a port picked as it starts"
    said = ", ".join(f"{w.name}={w.value}" for w in bad)
    ranks = [p.rank for p in plan.procs if wrong_port or p.node != 0]
    # torch before PR #175699 served 29500 on one node: a written 29500 worked there
    older_ok = wrong_port and not wrong_addr and plan.store_port_default
    older_ok = older_ok and port is not None and port.value == "29500"
    via = bad[0].via
    what = (
        f"points init_process_group at {via}" if via else f"sets {said} before init_process_group"
    )
    return [
        finding(
            "RM906",
            f"{bad[0].where} {what}: no store answers there under {plan.launcher}, the "
            "rendezvous times out (torch 2.13's torchrun assumed)",
            detail=f"torchrun serves its store on {served}. "
            + _detail(wrong_port, wrong_addr, plan)
            + (_OLDER_29500 if older_ok else ""),
            severity="warning" if older_ok else None,
            ranks=ranks,
            fix=_fix(bad),
            evidence=_evidence(bad),
        )
    ]


def _fix(bad: list[RendezvousWrite]) -> str:
    if bad[0].via:  # env:// reads the MASTER_ADDR/MASTER_PORT torchrun gives every worker
        return 'init_method="env://"'
    return "; ".join(f'os.environ.setdefault("{w.name}", "{w.value}")' for w in bad)


def _evidence(bad: list[RendezvousWrite]) -> list[str]:
    if bad[0].via:
        return [f"{bad[0].where}: init_process_group(init_method={bad[0].via!r})"]
    return [
        *(f"{w.where}: os.environ[{w.name!r}] = {w.value!r}" for w in bad),
        f"{bad[0].init_where}: init_process_group (env://)",
    ]


_OLDER_29500 = (
    " Before pytorch/pytorch PR #175699 (February 2026) a single-node launch without "
    "--master-port served 29500, where this works: a warning, not an error."
)


def _last(writes: tuple[RendezvousWrite, ...], name: str) -> RendezvousWrite | None:
    return next((w for w in reversed(writes) if w.name == name), None)


def _detail(wrong_port: bool, wrong_addr: bool, plan: LaunchPlan) -> str:
    parts = [
        "torchrun hands each worker MASTER_ADDR/MASTER_PORT of the store its agent hosts and "
        "sets TORCHELASTIC_USE_AGENT_STORE=True, so init_process_group(env://) starts no store "
        "of its own (the same for init_method='tcp://H:P'): every rank connects as a client "
        "to the address the script names. The fix keeps the script's value only where no "
        "launcher set one (torchrun sets both), or meets through env://."
    ]
    if wrong_port:
        parts.append(
            "The port differs from the one torchrun serves (torch 2.13: --standalone, c10d and a "
            "single-node launch without --master-port use a free port picked at start; static "
            "rendezvous serves --master-port, default 29500)."
        )
    if wrong_addr:
        parts.append(
            f"On {plan.nnodes} nodes a loopback MASTER_ADDR sends the ranks of every other node "
            "to their own host, where no store runs."
        )
    return " ".join(parts)


__all__ = ["rendezvous_findings"]
