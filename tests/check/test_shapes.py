"""Device selection in the shapes real training scripts take (scripts written here, same shapes).

Each row runs ``check_launch`` on one and on two 8-GPU nodes and asserts the verdict: a right
placement gives no error (warnings and info allowed, as listed), a wrong one its error code; the
physical GPUs of node 0 are asserted where the placement is simulated.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import check_launch
from rankmap.findings import Report
from rankmap.inventory import load_machine

SHAPES = Path(__file__).parents[1] / "data" / "check" / "shapes"
ALL8 = list(range(8))


@dataclass(frozen=True)
class Shape:
    script: str
    launch: tuple[str, ...]  # before the script; {n} is the node count
    one_node: str | None  # first error code on one node, None: no error
    two_nodes: str | None
    kind: str
    codes: tuple[str, ...] = ()  # non-error codes that must be present
    gpus: list[int | None] | None = None  # nvml index per local rank on node 0 (one node)


TORCHRUN = ("torchrun", "--nnodes", "{n}", "--nproc-per-node", "8")
SHAPE_ROWS = [
    Shape("gpt_config/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape("helper_misc/main.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape(
        "helper_misc/main.py",
        ("srun", "-N", "{n}", "--ntasks-per-node", "8", "--gres=gpu:8", "python"),
        None,
        None,
        "local_rank",
        gpus=ALL8,
    ),
    Shape("helper_dist/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape(
        "args_range/train.py",
        ("deepspeed", "--num_nodes", "{n}", "--num_gpus", "8"),
        None,
        None,
        "local_rank",
        gpus=ALL8,
    ),
    Shape(
        "args_range/train.py",
        ("python", "-m", "torch.distributed.launch", "--nnodes", "{n}", "--nproc_per_node", "8"),
        "RM901",
        "RM901",
        "local_rank",
        gpus=ALL8,  # the map shows the placement once the spelling is fixed, not RM901's failure
    ),
    Shape("hf_trainer/train.py", TORCHRUN, None, None, "accelerate", gpus=ALL8),
    Shape("device_mesh/train.py", TORCHRUN, None, None, "local_rank_modulo", gpus=ALL8),
    Shape("colossal/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape("mmengine/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape(
        "deepspeed_args/train.py",
        ("deepspeed", "--num_nodes", "{n}", "--num_gpus", "8"),
        None,
        None,
        "local_rank",
        gpus=ALL8,
    ),
    Shape("megatron_like/train.py", TORCHRUN, None, None, "global_rank", gpus=ALL8),
    Shape("spawn/train.py", ("python",), None, None, "local_rank"),
    Shape("lightning/train.py", ("python",), None, None, "local_rank"),
    Shape("fabric/train.py", ("python",), None, None, "local_rank"),
    Shape("ray_train/train.py", ("python",), None, None, "local_rank"),
    Shape("cvd_write/train.py", TORCHRUN, None, None, "visible_devices", gpus=ALL8),
    Shape("per_tensor/train.py", TORCHRUN, None, None, "local_rank", ("RM330",), gpus=ALL8),
    Shape("fsdp_device_id/train.py", TORCHRUN, None, None, "local_rank", ("RM330",), gpus=ALL8),
    Shape("gloo_cpu/train.py", TORCHRUN, None, None, "cpu", ("RM031",), gpus=[None] * 8),
    Shape("not_torch/train.py", TORCHRUN, None, None, "not_torch", ("RM031",), gpus=[None] * 8),
    Shape("unknown_helper/train.py", TORCHRUN, None, None, "unknown", ("RM030",)),
    Shape("star_import/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape("dictcomp_env/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape("cvd_physical/train.py", TORCHRUN, None, None, "local_rank", gpus=ALL8),
    Shape(
        "flag_branch/train.py",
        ("python",),  # one process: spawned workers, each with its index
        None,
        None,
        "none",
    ),
    # wrong placements: each must be found
    Shape("global_rank/train.py", TORCHRUN, None, "RM401", "global_rank", gpus=ALL8),
    Shape("const_nccl/train.py", TORCHRUN, "RM302", "RM302", "constant", gpus=[0] * 8),
    Shape("none_nccl/train.py", TORCHRUN, "RM301", "RM301", "none", gpus=[0] * 8),
]


def _run(shape: Shape, nodes: int) -> Report:
    launch = [a.replace("{n}", str(nodes)) for a in shape.launch]
    return check_launch(
        [*launch, str(SHAPES / shape.script)],
        machines=load_machine("dgx-h100"),
        env={},
        nodes=nodes,
        cwd=SHAPES,
    )


def _first_error(report: Report) -> str | None:
    return next((f.code for f in report.findings if f.severity.value == "error"), None)


@pytest.mark.parametrize("shape", SHAPE_ROWS, ids=lambda s: f"{s.script}-{s.launch[0]}")
@pytest.mark.parametrize("nodes", [1, 2])
def test_shape(shape: Shape, nodes: int) -> None:
    report = _run(shape, nodes)
    assert report.sections["launch"]["device_selection"] == shape.kind
    expected = shape.one_node if nodes == 1 else shape.two_nodes
    assert _first_error(report) == expected, [
        (f.code, f.severity, f.title) for f in report.findings
    ]
    codes = {f.code for f in report.findings}
    assert set(shape.codes) <= codes
    if shape.gpus is not None and nodes == 1:
        got = [p.nvml_index for p in report.placements if p.node_rank == 0]
        assert got == shape.gpus


def test_cvd_entry_used_as_ordinal_is_rm240() -> None:
    report = check_launch(
        ["torchrun", "--nproc-per-node", "2", str(SHAPES / "cvd_physical" / "train.py")],
        machines=load_machine("dgx-h100"),
        env={"CUDA_VISIBLE_DEVICES": "2,3"},
        cwd=SHAPES,
    )
    assert _first_error(report) == "RM240"
    assert "CUDA_VISIBLE_DEVICES[0] = 2" in report.findings[0].detail


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ((), "RM301"),  # worker(args.gpu=None): no set_device, every rank on cuda:0
        (("--gpu", "0"), "RM302"),  # one constant GPU for every rank
    ],
)
def test_argparse_values_of_the_launch_decide_branches(args: tuple[str, ...], error: str) -> None:
    report = check_launch(
        ["torchrun", "--nproc-per-node", "8", str(SHAPES / "flag_branch" / "train.py"), *args],
        machines=load_machine("dgx-h100"),
        env={},
        cwd=SHAPES,
    )
    assert _first_error(report) == error, [(f.code, f.title) for f in report.findings]


def test_spawn_flag_gives_the_spawn_index() -> None:
    from rankmap.check.script_scan import scan_path

    path = SHAPES / "flag_branch" / "train.py"
    sel = scan_path(path, path.read_text(), ("--spawn",), LocalFiles())
    assert (sel.kind, sel.dist_rank) == ("local_rank", True)


def test_guarded_branch_follows_the_launcher() -> None:
    """util/misc.py picks LOCAL_RANK under torchrun and SLURM_PROCID % device_count under srun."""
    from rankmap.check.script_scan import scan_path

    path = SHAPES / "helper_misc" / "main.py"
    sel = scan_path(path, path.read_text(), None, LocalFiles())
    guards = [g for g, _ in sel.alternatives]
    assert guards[:2] == [("RANK", "WORLD_SIZE"), ("SLURM_PROCID",)]
    assert sel.alternatives[1][1].kind == "global_rank" and sel.alternatives[1][1].modulo
    assert sel.where is not None and sel.where.endswith("misc.py:20")


def test_unknown_is_info_and_names_the_line() -> None:
    report = _run(Shape("unknown_helper/train.py", TORCHRUN, None, None, "unknown"), 1)
    info = next(f for f in report.findings if f.code == "RM030")
    assert info.severity.value == "info"
    assert "train.py:6" in info.title and "pick_device()" in info.title


def test_gloo_with_cuda_tensors_is_a_warning_not_an_error(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "import torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\nx = torch.ones(2).cuda()\n"
    )
    report = check_launch(
        ["torchrun", "--nproc-per-node", "8", str(script)],
        machines=load_machine("dgx-h100"),
        env={},
        cwd=tmp_path,
    )
    assert _first_error(report) is None
    assert [(f.code, f.severity.value) for f in report.findings][:1] == [("RM301", "warning")]


def test_local_module_is_read_not_run(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text(
        f"open({str(tmp_path / 'ran')!r}, 'w')\nimport os, torch\n"
        "def gpu():\n    return int(os.environ['LOCAL_RANK'])\n"
    )
    script = tmp_path / "train.py"
    script.write_text("import torch\nfrom helpers import gpu\ntorch.cuda.set_device(gpu())\n")
    from rankmap.check.script_scan import scan_path

    sel = scan_path(script, script.read_text(), None, LocalFiles())
    assert (sel.kind, sel.env_vars) == ("local_rank", ("LOCAL_RANK",))
    assert not (tmp_path / "ran").exists()


def test_torchrun_module_is_read_from_the_working_directory(tmp_path: Path) -> None:
    """``torchrun -m pkg.train`` reads ``pkg/train.py`` under cwd, as ``python -m`` finds it."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(
        "import os, torch, torch.distributed as dist\n"
        "torch.cuda.set_device(int(os.environ['RANK']))\n"
        "dist.init_process_group('nccl')\n"
    )
    machines = load_machine("dgx-h100")
    argv = ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "-m", "pkg.train"]
    report = check_launch(argv, machines=machines, env={}, cwd=tmp_path)
    assert _first_error(report) == "RM401"
    one = check_launch([*argv[:1], *argv[3:]], machines=machines, env={}, cwd=tmp_path)
    assert _first_error(one) is None and "RM005" not in {f.code for f in one.findings}
