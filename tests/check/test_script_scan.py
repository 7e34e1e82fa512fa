"""Static device-selection scan: ast only, never executed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankmap.check.script_scan import scan_script


@pytest.mark.parametrize(
    ("source", "kind", "extra"),
    [
        (
            "import os, torch\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))",
            "local_rank",
            {"env_vars": ("LOCAL_RANK",)},
        ),
        (
            "import os, torch\nlr = int(os.getenv('LOCAL_RANK', 0))\ntorch.cuda.set_device(lr)",
            "local_rank",
            {"env_default": 0},
        ),
        (
            "lr = int(os.environ['LOCAL_RANK'])\ndev = torch.device(f'cuda:{lr % torch.cuda.device_count()}')\nmodel.to(dev)",
            "local_rank_modulo",
            {"modulo": True},
        ),
        ("torch.cuda.set_device(dist.get_rank())", "global_rank", {"dist_rank": True}),
        (
            "r = int(os.environ['RANK'])\ntorch.cuda.set_device(r % torch.cuda.device_count())",
            "global_rank",
            {"modulo": True},
        ),
        (
            "torch.cuda.set_device(int(os.environ['SLURM_PROCID']))",
            "global_rank",
            {"env_vars": ("SLURM_PROCID",)},
        ),
        (
            "torch.cuda.set_device(int(os.environ['SLURM_LOCALID']))",
            "local_rank",
            {"env_vars": ("SLURM_LOCALID",)},
        ),
        ("model = Net().to('cuda:1')", "constant", {"constant": 1}),
        ("model = Net().cuda()", "none", {}),
        ("x = torch.zeros(3, device='cuda')", "none", {}),
        ("torch.cuda.set_device(0)", "constant", {"constant": 0}),
        (
            "from accelerate import Accelerator\naccelerator = Accelerator()",
            "accelerate",
            {"modulo": True},
        ),
        ("from accelerate import PartialState\nstate = PartialState()", "accelerate", {}),
        (
            "from transformers import AutoModel\nm = AutoModel.from_pretrained('x', device_map='auto')",
            "none",
            {},
        ),
        (
            "dist.init_process_group('nccl', device_id=torch.device('cuda', int(os.environ['LOCAL_RANK'])))",
            "local_rank",
            {},
        ),
        (
            "p.add_argument('--local_rank', type=int, default=-1)\nargs = p.parse_args()\ntorch.cuda.set_device(args.local_rank)",
            "local_rank",
            {"arg_dest": "local_rank", "arg_default": -1, "declared_args": ("--local_rank",)},
        ),
        (
            "p.add_argument('--local-rank', '--local_rank', type=int)\na, _ = p.parse_known_args()\ntorch.cuda.set_device(a.local_rank)",
            "local_rank",
            {"tolerant_args": True, "declared_args": ("--local-rank", "--local_rank")},
        ),
        (
            "local_rank = int(os.environ['LOCAL_RANK'])\ndevice = 'cuda:{}'.format(local_rank)\nmodel.to(device)",
            "local_rank",
            {"sets_current": False},
        ),
        ("device = 'cuda:{}'.format(local_rank)\nmodel.to(device)", "unknown", {}),
        ("import deepspeed\nengine, *_ = deepspeed.initialize(model=model)", "local_rank", {}),
        (
            "    torch.cuda.set_device(local_rank)\n    model.cuda()",
            "unknown",
            {},
        ),  # indented snippet
    ],
)
def test_classification(source: str, kind: str, extra: dict[str, object]) -> None:
    sel = scan_script(source)
    assert sel.kind == kind, sel
    for key, value in extra.items():
        assert getattr(sel, key) == value, (key, sel)
    assert sel.parse_error is None


def test_syntax_error_falls_back_to_convention() -> None:
    sel = scan_script("def main(:\n  pass\n", path="train.py")
    assert sel.kind == "assumed_local_rank"
    assert sel.parse_error is not None and sel.parse_error.startswith("train.py:1")


def test_line_and_call_recorded() -> None:
    sel = scan_script("import torch\n\n\ntorch.cuda.set_device(3)\n")
    assert sel.line == 4
    assert sel.call == "torch.cuda.set_device(3)"


def test_never_executes(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = (
        f"open({str(marker)!r}, 'w').write('x')\nraise SystemExit(3)\ntorch.cuda.set_device(0)\n"
    )
    sel = scan_script(source)
    assert sel.kind == "constant"
    assert not marker.exists()


def test_every_framework_model_names_the_source_line_it_rests_on() -> None:
    from rankmap.check.script_models import FRAMEWORKS

    assert len({m.name for m in FRAMEWORKS}) == len(FRAMEWORKS)
    for model in FRAMEWORKS:
        repo, _, rest = model.source.partition(" ")
        assert repo.count("/") == 1 and ".py" in rest, model.name
        assert model.calls and model.modules


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        ("import json\nprint(json.dumps({}))\n", "not_torch"),
        ("import torch, torch.distributed as dist\ndist.init_process_group('gloo')\n", "cpu"),
        (
            "import os, torch\nos.environ['CUDA_VISIBLE_DEVICES'] = os.environ['LOCAL_RANK']\n"
            "x = torch.ones(1).cuda()\n",
            "visible_devices",
        ),
        ("import torch\ntorch.cuda.set_device(-1)\n", "none"),  # a no-op in torch
    ],
)
def test_gpu_free_and_special_kinds(source: str, kind: str) -> None:
    assert scan_script(source).kind == kind


def test_a_name_guarded_by_itself_does_not_recurse() -> None:
    # `if mask is not None: mask = ...` guards a binding by a test of the same name; the guard
    # chase once recursed without end here and the whole script fell back to "assumed"
    source = (
        "import torch\nimport torch.distributed as dist\n\n"
        "def prepare(mask=None):\n"
        "    if mask is not None:\n"
        "        mask = mask.bool()\n"
        "    return mask\n\n"
        "def main():\n"
        "    dist.init_process_group('nccl')\n"
        "    local_rank = dist.get_rank()\n"
        "    torch.cuda.set_device(local_rank)\n"
        "    m = None\n"
        "    if m is not None:\n"
        "        m = prepare(m)\n"
        "    if m is not None:\n"
        "        torch.cuda.set_device(m)\n\n"
        "main()\n"
    )
    sel = scan_script(source, path="train.py")
    assert sel.parse_error is None
    assert sel.kind == "global_rank", sel
