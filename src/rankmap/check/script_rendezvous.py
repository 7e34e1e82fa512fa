"""Rendezvous addresses a script writes itself (read with ``ast`` only).

Also ``init_process_group(init_method="tcp://H:P")`` with a constant URL: the same address.

:func:`find_rendezvous_writes` finds ``os.environ["MASTER_ADDR"] = "127.0.0.1"`` /
``os.environ["MASTER_PORT"] = "12345"`` written as constants in the same block as, and before,
an ``init_process_group`` that rendezvouses through ``env://`` (no ``init_method`` other than
``env://``, no ``store=``). Only that shape is positive evidence that the job's ranks meet at the
written address: a write under a condition, in another function or after the call is not taken.
What the launcher hands the workers, and so whether the write breaks the rendezvous, is judged
in :mod:`rankmap.check.rendezvous_rules`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from urllib.parse import urlsplit

from rankmap.check import script_models as models
from rankmap.check.script_ast import is_environ, stmt_of, tail
from rankmap.check.script_flow import Flow
from rankmap.check.script_program import Module, Program
from rankmap.check.script_reach import block_holding, runs_whenever_reached
from rankmap.check.script_sinks import reachable, walk_nodes

RENDEZVOUS_VARS = ("MASTER_ADDR", "MASTER_PORT")


@dataclass(frozen=True)
class RendezvousWrite:
    """``os.environ[name] = value`` before an ``env://`` process-group init."""

    name: str  # MASTER_ADDR | MASTER_PORT
    value: str
    where: str  # path:line of the write
    init_where: str  # path:line of the init_process_group it precedes
    via: str | None = None  # the init_method URL that names it (tcp://H:P), if not os.environ


def find_rendezvous_writes(prog: Program, flow: Flow) -> tuple[RendezvousWrite, ...]:
    """Constant writes of MASTER_ADDR/MASTER_PORT that the next ``env://`` init reads."""
    found: dict[tuple[str, str], RendezvousWrite] = {}
    for mod, roots in reachable(prog):
        for node in walk_nodes(roots):
            if not isinstance(node, ast.Call) or tail(node.func) not in models.PROCESS_GROUP_INIT:
                continue
            if flow.dead(mod, node) or not runs_whenever_reached(mod, node, flow, prog):
                continue
            method = _init_method(node)
            if method == "env://":
                writes = _writes_before(mod, node)
            else:
                writes = _tcp_address(method, mod, node) if method else []
            for w in writes:
                found.setdefault((w.name, w.where), w)
    return tuple(found.values())


def _init_method(call: ast.Call) -> str | None:
    """``env://`` (also by default), a constant ``tcp://`` URL, or None (a store, other)."""
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    if "store" in kw:
        return None
    method = kw.get("init_method", call.args[1] if len(call.args) > 1 else None)
    if method is None:
        return "env://"
    text = method.value if isinstance(method, ast.Constant) else None
    if isinstance(text, str) and (text == "env://" or text.startswith("tcp://")):
        return text
    return None


def _tcp_address(url: str, mod: Module, call: ast.Call) -> list[RendezvousWrite]:
    """``init_method="tcp://H:P"`` meets at H:P like MASTER_ADDR/MASTER_PORT (the handler goes
    through the same ``_create_c10d_store``, reference/pytorch_nccl.md §7.1)."""
    try:
        parsed = urlsplit(url)
        host, port = parsed.hostname, parsed.port
    except ValueError:
        return []
    ranked = "rank=" in parsed.query or any(k.arg == "rank" for k in call.keywords)
    if not host or port is None or not ranked:
        return []  # without a rank tcp:// stops first: "rank parameter missing"
    where = mod.where(call)
    return [
        RendezvousWrite("MASTER_ADDR", host, where, where, via=url),
        RendezvousWrite("MASTER_PORT", str(port), where, where, via=url),
    ]


def _writes_before(mod: Module, call: ast.Call) -> list[RendezvousWrite]:
    stmt = stmt_of(mod, call)
    block = block_holding(mod, stmt)
    if block is None or not isinstance(stmt, ast.stmt):
        return []
    out = []
    for earlier in block[: block.index(stmt)]:
        write = _constant_write(earlier)
        if write is not None:
            name, value = write
            out.append(RendezvousWrite(name, value, mod.where(earlier), mod.where(call)))
    return out


def _constant_write(stmt: ast.AST) -> tuple[str, str] | None:
    """(name, value) of ``os.environ["MASTER_PORT"] = "12345"`` (or ``str(12345)``)."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
        return None
    target = stmt.targets[0]
    if not isinstance(target, ast.Subscript) or not is_environ(target.value):
        return None
    key = target.slice
    if not (isinstance(key, ast.Constant) and key.value in RENDEZVOUS_VARS):
        return None
    value = stmt.value
    if isinstance(value, ast.Call) and tail(value.func) == "str" and len(value.args) == 1:
        value = value.args[0]
    if isinstance(value, ast.Constant) and isinstance(value.value, (str, int)):
        if isinstance(value.value, bool):
            return None
        return str(key.value), str(value.value)
    return None


__all__ = ["RENDEZVOUS_VARS", "RendezvousWrite", "find_rendezvous_writes"]
