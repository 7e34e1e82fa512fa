"""``accelerate launch``: flags + YAML config -> a torchrun launch (reference/launchers.md §3).

Config file: ``--config_file`` or ``$HF_HOME/accelerate/default_config.yaml`` (``HF_HOME``
defaults to ``$XDG_CACHE_HOME/huggingface``, i.e. ``~/.cache/huggingface``). CLI flags override
file values. MULTI_GPU runs ``torch.distributed.run`` with ``nproc_per_node = num_processes //
num_machines``; ``gpu_ids`` other than ``all`` becomes ``CUDA_VISIBLE_DEVICES``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rankmap.errors import InputError
from rankmap.launchers import LaunchContext, LaunchIssue, LaunchPlan
from rankmap.launchers.options import OptSpec, Parsed, int_value, parse_options
from rankmap.launchers.torchrun import TorchrunArgs, plan_from_args
from rankmap.numbers import parse_int
from rankmap.visibility import resolve_visible

_VALUE = {
    "config_file": True,
    "num_processes": True,
    "num_machines": True,
    "machine_rank": True,
    "gpu_ids": True,
    "main_process_ip": True,
    "main_process_port": True,
    "rdzv_backend": True,
    "mixed_precision": True,
    "num_cpu_threads_per_process": True,
    "dynamo_backend": True,
    "deepspeed_config_file": True,
    "zero_stage": True,
    "deepspeed_multinode_launcher": True,
    "deepspeed_hostfile": True,
    "multi_gpu": False,
    "cpu": False,
    "use_deepspeed": False,
    "use_fsdp": False,
    "use_megatron_lm": False,
    "same_network": False,
    "module": False,
    "no_python": False,
    "debug": False,
    "quiet": False,
    "tpu": False,
}
SPEC = OptSpec(
    "accelerate launch", _VALUE, {"-m": "module", "-q": "quiet"}, strict=False, guess_values=True
)
_MULTI = ("MULTI_GPU", "DEEPSPEED", "FSDP", "MEGATRON_LM")


def default_config_path(env: Mapping[str, str]) -> Path | None:
    """``$HF_HOME/accelerate/default_config.yaml`` with accelerate's fallbacks, from ``env``."""
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]) / "accelerate" / "default_config.yaml"
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]) / "huggingface" / "accelerate" / "default_config.yaml"
    if env.get("HOME"):
        return Path(env["HOME"]) / ".cache" / "huggingface" / "accelerate" / "default_config.yaml"
    return None


def load_yaml(text: str, where: str) -> dict[str, Any]:
    """A YAML mapping; ``InputError`` naming the file and line when malformed."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"{where}{line}: malformed YAML: {problem}") from None
    except RecursionError:
        raise InputError(f"{where}: YAML nested too deeply (not an accelerate config)") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise InputError(f"{where}:1: expected a mapping of accelerate config keys")
    return doc


def simulate(argv: Sequence[str], ctx: LaunchContext) -> LaunchPlan:
    """Plan of ``accelerate launch ...`` (argv[0] = ``accelerate``)."""
    rest = list(argv[2:]) if argv[1:2] == ["launch"] else list(argv[1:])
    p = parse_options(rest, SPEC)
    cfg, cfg_path, notes = _config(p, ctx)

    def opt(flag: str, key: str, default: Any = None) -> Any:
        got = p.get(flag)
        return got if got is not None else cfg.get(key, default)

    num_machines = int_value(
        "accelerate", "--num_machines", str(opt("num_machines", "num_machines", 1)), 1, minimum=1
    )
    dist = _flag_dist_type(p, str(cfg.get("distributed_type", "NO")).upper())
    num_processes = _num_processes(p, cfg, ctx, opt("num_processes", "num_processes"), notes)
    if not cfg and dist == "NO" and num_processes > 1:
        dist = "MULTI_GPU"
    gpu_ids = _s(opt("gpu_ids", "gpu_ids", "all")) or "all"
    issues: list[LaunchIssue] = []
    multi = dist in _MULTI and num_processes > 1
    extra = _gpu_ids_env(gpu_ids, multi, issues)
    if extra is None:
        return _stopped(argv, ctx, issues, notes, p.rest)
    if _deepspeed_runner_ignores_cvd(dist, num_machines, cfg) and extra:
        issues.append(_ignored_gpu_ids(gpu_ids))
        extra = {}
    if multi and num_processes % max(num_machines, 1):
        notes.append(
            f"num_processes {num_processes} is not a multiple of num_machines {num_machines}."
        )
    targs = _torchrun_args(p, cfg, opt, num_machines, num_processes, multi)
    plan = plan_from_args(targs, ctx, launcher="accelerate", argv=argv, extra_env=extra)
    from dataclasses import replace

    issues += [
        replace(
            i,
            title=_accelerate_title(i.code, i.title),
            fix=_accelerate_fix(i.code, i.fix, on_line=p.get("machine_rank") is not None),
        )
        for i in plan.issues
    ]
    if cfg_path:
        notes.insert(0, f"accelerate config: {cfg_path}")
    return replace(
        plan,
        issues=tuple(issues),
        notes=tuple(notes) + plan.notes,
        fix_hints={"config_file": str(cfg_path)} if cfg_path else {},
        nproc_from_machine=not cfg and p.get("num_processes") is None,
    )


# CLI switches that set distributed_type, later ones winning (accelerate's own precedence).
_DIST_FLAGS = (("multi_gpu", "MULTI_GPU"), ("use_deepspeed", "DEEPSPEED"), ("use_fsdp", "FSDP"))


def _flag_dist_type(p: Parsed, configured: str) -> str:
    """``distributed_type`` after the ``--multi_gpu``/``--use_*`` switches override the file."""
    dist = configured
    for flag, value in _DIST_FLAGS:
        if p.flag(flag):
            dist = value
    return dist


def _num_processes(
    p: Parsed, cfg: Mapping[str, Any], ctx: LaunchContext, given: Any, notes: list[str]
) -> int:
    """``--num_processes`` / config value; without a config, the GPU count (noted)."""
    n_default = len(resolve_visible(ctx.hosts(1)[0], ctx.env).devices) if not cfg else 1
    num_processes = int_value("accelerate", "--num_processes", _s(given), n_default, minimum=1)
    if not cfg and p.get("num_processes") is None:
        notes.append(
            f"no accelerate config found: --num_processes defaults to the GPU count ({n_default})"
            " (NOTE: accelerate's default, unverified across versions)."
        )
    return num_processes


def _gpu_ids_env(gpu_ids: str, multi: bool, issues: list[LaunchIssue]) -> dict[str, str] | None:
    """``CUDA_VISIBLE_DEVICES`` from ``gpu_ids``; ``None`` (RM923 added) when accelerate stops."""
    if gpu_ids == "all" or not multi:
        return {}
    ids = [t for t in gpu_ids.split(",") if t.strip()]
    if len(ids) >= 2:
        return {"CUDA_VISIBLE_DEVICES": ",".join(i.strip() for i in ids)}
    line = (
        "Less than two GPU ids were configured and tried to run on multiple GPUs. Please "
        "ensure at least two are specified for `--gpu_ids`, or use `--gpu_ids='all'`."
    )
    issues.append(
        LaunchIssue(
            "RM923",
            "accelerate stops: fewer than two gpu_ids for a multi-GPU run",
            detail=line,
            fix="gpu_ids: all",
            predicted=(line,),
        )
    )
    return None


def _deepspeed_runner_ignores_cvd(dist: str, num_machines: int, cfg: Mapping[str, Any]) -> bool:
    """Multi-node DeepSpeed through its own runner (not ``standard``) passes ``--num_gpus``."""
    if dist != "DEEPSPEED" or num_machines <= 1:
        return False
    launcher = cfg.get("deepspeed_config", {}).get("deepspeed_multinode_launcher", "pdsh")
    return str(launcher) != "standard"


def _ignored_gpu_ids(gpu_ids: str) -> LaunchIssue:
    return LaunchIssue(
        "RM922",
        f"gpu_ids {gpu_ids} is ignored: accelerate runs the DeepSpeed runner with --num_gpus",
        detail="With --num_gpus the DeepSpeed runner ignores CUDA_VISIBLE_DEVICES and uses GPUs 0..N-1.",
        fix="deepspeed_multinode_launcher: standard (torchrun), or select GPUs per host in the hostfile",
    )


def _torchrun_args(
    p: Parsed,
    cfg: Mapping[str, Any],
    opt: Callable[[str, str], Any],
    num_machines: int,
    num_processes: int,
    multi: bool,
) -> TorchrunArgs:
    """The ``torch.distributed.run`` call accelerate makes for this launch."""
    nproc = max(1, num_processes // max(num_machines, 1)) if multi else 1
    machine_rank = opt("machine_rank", "machine_rank")
    if isinstance(machine_rank, str) and "$" in machine_rank:
        machine_rank = None  # each node's own value, known when the job runs (srun's NODEID)
    rest_args = p.rest
    return TorchrunArgs(
        nnodes=str(num_machines if multi else 1),
        nproc_per_node=str(nproc),
        node_rank=None
        if machine_rank is None or not multi
        else parse_int(str(machine_rank), "accelerate launch: --machine_rank"),
        rdzv_backend=str(cfg.get("rdzv_backend", "static")),
        standalone=False,
        virtual_local_rank=False,
        use_env=True,
        master_port=_s(opt("main_process_port", "main_process_port")),
        master_addr=_s(opt("main_process_ip", "main_process_ip")),
        rdzv_endpoint=None,
        module=p.flag("module"),
        no_python=p.flag("no_python"),
        script=rest_args[0] if rest_args else None,
        script_args=tuple(rest_args[1:]),
    )


def _accelerate_title(code: str, title: str) -> str:
    """The option as accelerate spells it (``machine_rank``, ``--machine_rank``)."""
    return title.replace("--node-rank", "machine_rank") if code == "RM804" else title


def _accelerate_fix(code: str, fix: str, *, on_line: bool = False) -> str:
    if code == "RM804" and on_line:
        # the option wins over the config file: it is what each node must get
        return (
            "Give each machine its own --machine_rank (0..num_machines-1); under srun, "
            "`srun bash -c 'accelerate launch ... --machine_rank $SLURM_NODEID ...'` (single "
            "quotes: each node's shell expands it)."
        )
    if code == "RM804":
        return "Give each machine its own machine_rank (0..num_machines-1) in its config file."
    return fix.replace("torchrun --nnodes", "accelerate launch --num_machines")


def _s(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def _config(p: Parsed, ctx: LaunchContext) -> tuple[dict[str, Any], str | None, list[str]]:
    notes: list[str] = []
    explicit = p.get("config_file")
    if explicit:
        return load_yaml(ctx.read(explicit, "--config_file"), explicit), explicit, notes
    path = default_config_path(ctx.env)
    if path is not None and ctx.exists(path):
        return load_yaml(ctx.read(path, "accelerate default config"), str(path)), str(path), notes
    return {}, None, notes


def _stopped(
    argv: Sequence[str],
    ctx: LaunchContext,
    issues: list[LaunchIssue],
    notes: list[str],
    rest: Sequence[str],
) -> LaunchPlan:
    return LaunchPlan(
        launcher="accelerate",
        nnodes=1,
        nproc_per_node=0,
        procs=(),
        script=rest[0] if rest else None,
        issues=tuple(issues),
        notes=tuple(notes),
        argv=tuple(argv),
        hosts=tuple(ctx.hosts(1)),
    )
