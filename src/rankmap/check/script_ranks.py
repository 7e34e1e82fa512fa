"""Checks across a script's sinks and its process-group call (read with ``ast`` only).

- :func:`disagreeing_sink`: the deciding sink (``set_device``, a framework) selects the local
  GPU, but a later one (DDP/FSDP ``device_ids``/``device_id``, ``init_process_group(device_id=)``,
  ``.to(...)``) is given the global rank: right on one node, wrong on the others (RM401);
- :func:`find_local_rank_init`: ``init_process_group(rank=<local index>, world_size=<one node's
  count>)``: every node claims the global ranks 0..n-1 (RM905).
"""

from __future__ import annotations

import ast
from dataclasses import replace

from rankmap.check import script_models as models
from rankmap.check.script_ast import tail
from rankmap.check.script_flow import Flow
from rankmap.check.script_program import Program
from rankmap.check.script_reach import runs_whenever_reached
from rankmap.check.script_sinks import Sink, frame_at, reachable, walk_nodes
from rankmap.check.script_values import Choice, Dev, Rank, Seq, Value


def global_index(v: Value) -> bool:
    """``v`` is the global rank itself as a device index (not wrapped by ``% device_count``,
    not combined with a factor, not read on a path that may not run)."""
    if isinstance(v, Rank):
        return v.scope == "global" and not (
            v.modulo or v.modulus or v.scaled or v.via_cvd or v.conditional
        )
    if isinstance(v, Dev) and v.index is not None:
        return global_index(v.index)
    if isinstance(v, Seq) and v.items:
        return global_index(v.items[0])
    if isinstance(v, Choice):
        return any(global_index(o) for _, o in v.options)
    return False


def disagreeing_sink(sinks: list[Sink]) -> Sink | None:
    """A later sink (DDP/FSDP ``device_ids``/``device_id``, ``init_process_group(device_id=)``,
    ``.to``) given the global rank where the deciding ``set_device``/framework sink is not."""
    if not sinks or sinks[0].kind not in ("set_device", "framework", "cvd"):
        return None
    if global_index(sinks[0].value):
        return None
    return next(
        (
            s
            for s in sinks[1:]
            if s.kind in ("device_id", "wrapper", "tensor") and global_index(s.value)
        ),
        None,
    )


def find_local_rank_init(prog: Program, flow: Flow) -> tuple[str, tuple[str, ...]] | None:
    """(``path:line: `text```, the variables it needs) of an ``init_process_group(rank=<local
    index>, ...)``: on more than one node every node claims the ranks 0..n-1. The variables are
    those the local index is guarded by (``local_rank = int(os.environ["LOCAL_RANK"])`` under
    ``if "LOCAL_RANK" in os.environ``, else -1): the rank is the local index where they are set."""
    for mod, roots in reachable(prog):
        for node in walk_nodes(roots):
            if not isinstance(node, ast.Call) or tail(node.func) not in models.PROCESS_GROUP_INIT:
                continue
            kw = {k.arg: k.value for k in node.keywords if k.arg}
            if "rank" not in kw or flow.dead(mod, node):
                continue
            if not runs_whenever_reached(mod, node, flow, prog, inside=False):
                continue  # a function used only on a path the analysis cannot decide
            needs = local_index_needs(flow.value(kw["rank"], frame_at(mod, node)))
            if needs is not None:
                return f"{mod.where(node)}: `{mod.text(node)}`", needs
    return None


def local_index_needs(v: Value) -> tuple[str, ...] | None:
    """The variables under which ``v`` is a node's local index (``()``: always); ``None``: not a
    local index on any path the analysis can name."""
    if isinstance(v, Rank):
        if v.scope != "local" or v.scaled or v.via_cvd or v.conditional:
            return None
        return ()
    if not isinstance(v, Choice) or not v.options:
        return None
    every = [local_index_needs(o) for _, o in v.options]
    if all(n == () for n in every):
        return ()
    guard, first = v.options[0]
    if isinstance(first, Rank) and first.conditional and set(first.env_vars) <= set(guard):
        first = replace(first, conditional=False)  # read exactly where its guard holds
    needs = local_index_needs(first)
    return None if needs is None else tuple(dict.fromkeys((*guard, *needs)))


__all__ = ["disagreeing_sink", "find_local_rank_init", "global_index", "local_index_needs"]
