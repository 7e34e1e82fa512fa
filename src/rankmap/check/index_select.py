"""The CUDA index each simulated process selects, from its :class:`DeviceSelection` (the
script's data flow) and what the launcher gives it: environment, appended arguments, guarded
branches, CUDA_VISIBLE_DEVICES written by the script."""

from __future__ import annotations

from collections.abc import Mapping

from rankmap.check.script_ast import guard_holds
from rankmap.check.script_scan import DeviceSelection
from rankmap.launchers import Proc
from rankmap.model import Host
from rankmap.visibility import VisibleView, resolve_visible

# the reason of a process whose visible-devices list the launch script computes (check.engine)
COMPUTED_BY_SCRIPT = "is computed by the script: not simulated"


def select_index(
    sel: DeviceSelection, proc: Proc, base: Mapping[str, str], n_visible: int
) -> tuple[int | None, str | None, str, bool]:
    """(cuda index, error, how it was chosen, whether a default stood in for a missing value)."""
    idx, err, why, dflt = _select(sel, proc, base, n_visible)
    if sel.factor != 1 or sel.offset or sel.modulus:
        why += f" ({_arithmetic(sel)})"
    return idx, err, why, dflt


def _arithmetic(sel: DeviceSelection) -> str:
    """How the script combines the rank: ``× 2 + 1``."""
    parts = [f"× {sel.factor}"] if sel.factor != 1 else []
    if sel.offset:
        parts.append(f"{'+' if sel.offset > 0 else '-'} {abs(sel.offset)}")
    if sel.modulus:
        parts.append(f"% {sel.modulus}")
    return " ".join(parts)


def _select(
    sel: DeviceSelection, proc: Proc, base: Mapping[str, str], n_visible: int
) -> tuple[int | None, str | None, str, bool]:
    def get(name: str) -> str | None:
        return proc.env.get(name, base.get(name))

    if sel.alternatives:
        for guard, alt in sel.alternatives:
            if guard_holds(guard, get):
                idx, err, why, dflt = select_index(alt, proc, base, n_visible)
                said = [f"{v[1:]} unset" if v.startswith("!") else f"{v} set" for v in guard]
                prefix = f"{', '.join(said)}: " if guard else ""
                # a nested choice under the same guard says it once
                return idx, err, why if why.startswith(prefix) else prefix + why, dflt
        return None, None, "no branch of the device selection applies: not simulated", False
    if sel.via_cvd:
        return _cvd_entry(sel, proc, base, n_visible)
    if sel.gpu_free:
        return None, None, "no GPU use found", False
    if sel.kind == "none":
        return 0, None, "no device selected: current device cuda:0", False
    if sel.kind == "constant" and sel.arg_dest is None:
        idx = sel.constant if sel.constant is not None else 0
        return _mod(idx, sel, n_visible), None, f"constant cuda:{idx}", False
    if sel.arg_dest is not None:
        passed = _arg_passed(sel, proc)
        if passed is not None or not sel.env_vars:
            return _from_arg(sel, proc, n_visible)
    if sel.kind == "unknown" and not sel.env_vars:
        # NOTE: the index could not be traced; the torchrun convention is assumed (RM030 says so).
        idx = proc.local_rank
        return _mod(idx, sel, n_visible), None, f"untraced index: assuming local rank {idx}", False
    if sel.dist_rank and not sel.env_vars:
        idx = proc.rank if sel.kind == "global_rank" else proc.local_rank
        what = "global rank" if sel.kind == "global_rank" else "local rank"
        return _mod(idx, sel, n_visible), None, f"{what} {idx}", False
    if sel.dist_rank and sel.kind == "global_rank":
        idx = proc.rank
        return _mod(idx, sel, n_visible), None, f"global rank {idx}", False
    for name in sel.env_vars:
        raw = get(name)
        if raw is not None and ("$" in raw or "…" in raw):
            # a value the launch script computes when it runs (a loop over $(nvidia-smi ...)):
            # unknown here, not a ValueError (review 57)
            return None, None, f"{name}={raw}: computed when the job runs (not simulated)", False
        if raw is not None:
            try:
                idx = int(raw)
            except ValueError:
                return None, f"ValueError: {name}={raw!r}", f"{name}={raw}", False
            return _mod(idx, sel, n_visible), None, f"{name}={raw}", False
    if sel.dist_rank and sel.kind != "global_rank":
        # none of the variables is set, and the framework finds the rank itself (DeepSpeed's
        # MPI discovery): the process's local rank, no default standing in
        idx = proc.local_rank
        return _mod(idx, sel, n_visible), None, f"found by the framework: local rank {idx}", False
    if sel.kind == "assumed_local_rank":
        # no script was read: what it reads is unknown, so no KeyError is predicted (RM005 says
        # which variable a launcher without LOCAL_RANK gives instead)
        return proc.local_rank, None, f"assumed: local rank {proc.local_rank}", False
    missing = sel.env_vars[0] if sel.env_vars else "LOCAL_RANK"
    # a read in a branch that may not run: missing, or at a sentinel default (``-1``: "not
    # launched"), the branch's test most likely kept it from running
    if sel.conditional and (sel.env_default is None or sel.env_default < 0):
        return (
            None,
            None,
            f"{missing} is not set there: that branch may not run (not simulated)",
            False,
        )
    if sel.env_default is not None:
        idx = sel.env_default
        why = f"{missing} unset: default {idx}"
        return _mod(idx, sel, n_visible), None, why, True
    return None, f"KeyError: '{missing}'", f"{missing} is not set", True


def _arg_passed(sel: DeviceSelection, proc: Proc) -> str | None:
    """The value the launcher passes for ``sel.arg_dest`` (``--x=v`` or ``--x v``), if any."""
    args = list(proc.args)
    for i, arg in enumerate(args):
        name, eq, value = arg.partition("=")
        if name.lstrip("-").replace("-", "_") != sel.arg_dest or not name.startswith("-"):
            continue
        if not eq and i + 1 < len(args):
            value = args[i + 1]
        if value.lstrip("-").isdecimal():
            return value
    return None


def _from_arg(
    sel: DeviceSelection, proc: Proc, n_visible: int
) -> tuple[int | None, str | None, str, bool]:
    value = _arg_passed(sel, proc)
    if value is not None:
        idx = int(value)
        return _mod(idx, sel, n_visible), None, f"--{sel.arg_dest}={value}", False
    default = sel.arg_default if sel.arg_dest == "local_rank" else sel.constant
    if default is None or default < 0:
        # NOTE: torch.cuda.set_device ignores negative indices (``if device >= 0``), so the
        # process stays on cuda:0; a None default is treated the same way (unverified).
        return 0, None, f"--{sel.arg_dest} not passed (default {default}): stays on cuda:0", True
    return _mod(default, sel, n_visible), None, f"--{sel.arg_dest} default {default}", True


def _cvd_entry(
    sel: DeviceSelection, proc: Proc, base: Mapping[str, str], n_visible: int
) -> tuple[int | None, str | None, str, bool]:
    """``int(CUDA_VISIBLE_DEVICES.split(",")[rank])``: a physical id used as a CUDA ordinal."""
    plain = DeviceSelection(**{**sel.__dict__, "via_cvd": False, "alternatives": ()})
    pos, err, why, dflt = select_index(plain, proc, base, n_visible)
    if err is not None or pos is None:
        return pos, err, why, dflt
    cvd = proc.env.get("CUDA_VISIBLE_DEVICES", base.get("CUDA_VISIBLE_DEVICES"))
    entries = [t.strip() for t in (cvd or "").split(",")]
    if cvd is None or not 0 <= pos < len(entries) or not entries[pos].isdecimal():
        return None, "IndexError: CUDA_VISIBLE_DEVICES entry", f"{why}: no such entry", dflt
    idx = int(entries[pos])
    return idx, None, f"{why} -> CUDA_VISIBLE_DEVICES[{pos}] = {idx} (a physical id)", dflt


def branch_of(sel: DeviceSelection, proc: Proc, base: Mapping[str, str]) -> DeviceSelection:
    """The alternative of ``sel`` whose guard ``proc``'s variables meet (``sel`` itself when it
    has none, or none applies)."""
    for guard, alt in sel.alternatives:
        if guard_holds(guard, lambda v: proc.env.get(v, base.get(v))):
            return alt
    return sel


def branch_kind(sel: DeviceSelection, proc: Proc, base: Mapping[str, str]) -> str:
    return branch_of(sel, proc, base).kind


def own_visible(
    sel: DeviceSelection, proc: Proc, base: Mapping[str, str], host: Host, view: VisibleView
) -> tuple[VisibleView, str]:
    """The script writes CUDA_VISIBLE_DEVICES from a rank before CUDA starts: it sees that GPU."""
    plain = DeviceSelection(**{**sel.__dict__, "kind": "local_rank", "alternatives": ()})
    idx, err, why, _ = select_index(plain, proc, base, len(host.gpus))
    if err is not None or idx is None:
        return view, why
    return resolve_visible(
        host, {"CUDA_VISIBLE_DEVICES": str(idx)}
    ), f"CUDA_VISIBLE_DEVICES={idx} ({why})"


def with_mod(
    result: tuple[int | None, str | None, str, bool], sel: DeviceSelection, n: int
) -> tuple[int | None, str | None, str, bool]:
    idx, err, why, dflt = result
    if sel.modulo and err is None:
        why += f" % device_count {n}"
    return idx, err, why, dflt


def _mod(idx: int, sel: DeviceSelection, n_visible: int) -> int:
    idx = idx * sel.factor + sel.offset  # literal arithmetic on the rank (``local_rank + 1``)
    if sel.modulus > 0:
        idx %= sel.modulus  # ``local_rank % 2``
    if sel.modulo and n_visible > 0:
        return idx % n_visible
    return idx
