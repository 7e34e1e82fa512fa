"""Rules that only bite on a second node (scripts written here, in shapes real scripts take).

- sinks that disagree: set_device gets the local index, a later sink (DDP ``device_ids``,
  FSDP/``init_process_group`` ``device_id``, ``.to``) the global rank -> RM401 on two nodes;
- duplicate global ranks: ``init_process_group(rank=<local index>, world_size=<one node's
  count>)`` -> RM905 on two nodes.
Both are right on one node, where the global rank is the local one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from script_checks import check_script

from rankmap.adapters.files import LocalFiles
from rankmap.check.script_scan import scan_path
from rankmap.findings import Finding, Report

HEAD = (
    "import os\nimport torch\nimport torch.distributed as dist\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n\n"
)


def _report(tmp_path: Path, body: str, nodes: int, launch: tuple[str, ...] = ()) -> Report:
    launch = launch or ("torchrun", "--nnodes", str(nodes), "--nproc-per-node", "8")
    return check_script(tmp_path, HEAD + body, launch, nodes=nodes)


def _errors(report: Report) -> list[Finding]:
    return [f for f in report.findings if f.severity.value == "error"]


DISAGREE = [
    (  # DiT-style: device from the global rank modulo the GPU count, DDP given the rank itself
        "dist.init_process_group('nccl')\nrank = dist.get_rank()\n"
        "device = rank % torch.cuda.device_count()\ntorch.cuda.set_device(device)\n"
        "model = DDP(torch.nn.Linear(2, 2).to(device), device_ids=[rank])\n",
        11,
        "device_ids=[torch.cuda.current_device()]",
    ),
    (
        "local_rank = int(os.environ['LOCAL_RANK'])\ntorch.cuda.set_device(local_rank)\n"
        "dist.init_process_group('nccl')\nrank = int(os.environ['RANK'])\n"
        "model = torch.nn.Linear(2, 2).to(f'cuda:{rank}')\n",
        11,
        ".to(torch.device('cuda', torch.cuda.current_device()))",
    ),
    (
        "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "dist.init_process_group('nccl')\n"
        "model = FSDP(torch.nn.Linear(2, 2), device_id=torch.device(dist.get_rank()))\n",
        9,
        "device_id=torch.device('cuda', torch.cuda.current_device())",
    ),
]


@pytest.mark.parametrize(("body", "line", "fix"), DISAGREE)
def test_later_sink_with_the_global_rank_fails_on_the_second_node(
    tmp_path: Path, body: str, line: int, fix: str
) -> None:
    assert _errors(_report(tmp_path, body, 1)) == []
    errors = _errors(_report(tmp_path, body, 2))
    assert [f.code for f in errors] == ["RM401"]
    f = errors[0]
    assert f"train.py:{line}" in f.title and "invalid device ordinal" in f.title
    assert list(f.ranks) == list(range(8, 16))
    assert f.fix.startswith(fix)


@pytest.mark.parametrize(
    "sink",
    [
        "DDP(model, device_ids=[local_rank])",
        "model.to(rank % torch.cuda.device_count())",
        "DDP(model, device_ids=[torch.cuda.current_device()])",
    ],
)
def test_later_sink_that_agrees_is_no_finding(tmp_path: Path, sink: str) -> None:
    body = (
        "local_rank = int(os.environ['LOCAL_RANK'])\ntorch.cuda.set_device(local_rank)\n"
        "dist.init_process_group('nccl')\nrank = dist.get_rank()\n"
        f"model = torch.nn.Linear(2, 2).cuda()\nmodel = {sink}\n"
    )
    assert _errors(_report(tmp_path, body, 2)) == []


LOCAL_INIT = (
    "local_rank = int(os.environ['LOCAL_RANK'])\ntorch.cuda.set_device(local_rank)\n"
    "dist.init_process_group('nccl', rank=local_rank, world_size={size})\n"
    "model = torch.nn.Linear(2, 2).cuda()\n"
)


@pytest.mark.parametrize(
    "size",
    [
        "torch.cuda.device_count()",
        "int(os.environ['LOCAL_WORLD_SIZE'])",
        "int(os.environ['WORLD_SIZE'])",  # the job's size: ranks 8.. never check in
        "args_world_size()",  # a size the analysis does not follow: the rank alone decides
    ],
)
def test_local_rank_and_node_count_in_init_claim_the_same_ranks(tmp_path: Path, size: str) -> None:
    body = LOCAL_INIT.format(size=size)
    assert _errors(_report(tmp_path, body, 1)) == []
    errors = _errors(_report(tmp_path, body, 2))
    assert [f.code for f in errors] == ["RM905"]
    assert "train.py:9" in errors[0].title and "global ranks 0-7:" in errors[0].title
    assert errors[0].fix == (
        'dist.init_process_group("nccl", rank=int(os.environ["RANK"]), '
        'world_size=int(os.environ["WORLD_SIZE"]))'
    )


def test_local_rank_guarded_by_its_variable_in_a_helper_module_claims_the_same_ranks(
    tmp_path: Path,
) -> None:
    """A helper of the script's own sets ``args.local_rank`` to LOCAL_RANK where it is set (else
    -1); the rank given to init_process_group is the local index wherever the launcher sets it."""
    (tmp_path / "helpers.py").write_text(
        "import argparse\nimport os\n\n"
        "def parse():\n    args = argparse.ArgumentParser().parse_args()\n"
        "    local_rank = -1\n"
        "    if 'LOCAL_RANK' in os.environ.keys():\n"
        "        local_rank = int(os.environ['LOCAL_RANK'])\n"
        "    args.local_rank = local_rank\n    return args\n"
    )
    body = (
        "from helpers import *\n\nargs = parse()\n"
        "torch.cuda.set_device(args.local_rank)\n"
        "dist.init_process_group('nccl', rank=args.local_rank, world_size=8)\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
    )
    assert _errors(_report(tmp_path, body, 1)) == []
    assert [f.code for f in _errors(_report(tmp_path, body, 2))] == ["RM905"]
    # srun sets no LOCAL_RANK: the rank is -1 there, not the local index (a different failure)
    srun = ("srun", "-N", "2", "--ntasks-per-node", "8", "--gres=gpu:8", "python")
    assert "RM905" not in [f.code for f in _report(tmp_path, body, 2, srun).findings]


def test_rank_init_fix_names_the_launcher_variables(tmp_path: Path) -> None:
    body = (
        "local_rank = int(os.environ['SLURM_LOCALID'])\ntorch.cuda.set_device(local_rank)\n"
        "dist.init_process_group('nccl', rank=local_rank, "
        "world_size=int(os.environ['SLURM_NTASKS_PER_NODE']))\n"
        "model = torch.nn.Linear(2, 2).cuda()\n"
    )
    srun = ("srun", "-N", "2", "--ntasks-per-node", "8", "--gres=gpu:8", "python")
    errors = _errors(_report(tmp_path, body, 2, srun))
    assert [f.code for f in errors] == ["RM905"]
    assert 'os.environ["SLURM_PROCID"]' in errors[0].fix
    assert 'os.environ["SLURM_NTASKS"]' in errors[0].fix


def test_node_offset_rank_is_no_finding(tmp_path: Path) -> None:
    """The torchvision/ImageNet shape: rank = node_rank * ngpus + gpu, world = nnodes * ngpus."""
    body = (
        "local_rank = int(os.environ['LOCAL_RANK'])\ntorch.cuda.set_device(local_rank)\n"
        "ngpus = torch.cuda.device_count()\nnode_rank = int(os.environ['GROUP_RANK'])\n"
        "dist.init_process_group('nccl', rank=node_rank * ngpus + local_rank, "
        "world_size=2 * ngpus)\nmodel = torch.nn.Linear(2, 2).cuda()\n"
    )
    assert _errors(_report(tmp_path, body, 2)) == []


def test_spawn_index_and_device_count_is_read_as_local(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        HEAD + "import torch.multiprocessing as mp\n\n"
        "def worker(gpu, ngpus):\n    torch.cuda.set_device(gpu)\n"
        "    dist.init_process_group('nccl', init_method='tcp://10.0.0.1:23456', rank=gpu, "
        "world_size=ngpus)\n\n"
        "if __name__ == '__main__':\n    n = torch.cuda.device_count()\n"
        "    mp.spawn(worker, nprocs=n, args=(n,))\n"
    )
    sel = scan_path(script, script.read_text(), None, LocalFiles())
    assert sel.local_init is not None and "train.py:11" in sel.local_init


def test_fallback_in_except_does_not_hide_the_rank_of_the_try_body(tmp_path: Path) -> None:
    """``try: init; rank = dist.get_rank() except: rank = 0``: the try body's rank decides."""
    body = (
        "def setup():\n    try:\n        dist.init_process_group('nccl')\n"
        "        rank = dist.get_rank()\n    except Exception:\n        rank = 0\n"
        "    device = torch.device(f'cuda:{rank}')\n    torch.cuda.set_device(device)\n"
        "    return device\n\nmodel = torch.nn.Linear(2, 2).to(setup())\n"
    )
    one = _report(tmp_path, body, 1)
    assert one.sections["launch"]["device_selection"] == "global_rank"
    assert _errors(one) == []
    assert [f.code for f in _errors(_report(tmp_path, body, 2))] == ["RM401"]


def test_reassignment_from_itself_reads_the_earlier_binding(tmp_path: Path) -> None:
    """``x = os.environ.get(...)`` then ``x = int(0 if x is None else x)``: still the rank."""
    body = (
        "LOCAL_RANK = os.environ.get('LOCAL_RANK')\n"
        "LOCAL_RANK = int(0 if LOCAL_RANK is None else LOCAL_RANK)\n"
        "DEVICE = torch.device(f'cuda:{LOCAL_RANK}')\n"
        "dist.init_process_group('nccl')\n"
        "model = DDP(torch.nn.Linear(2, 2).to(DEVICE), device_ids=[LOCAL_RANK])\n"
    )
    for nodes in (1, 2):
        report = _report(tmp_path, body, nodes)
        assert report.sections["launch"]["device_selection"] == "local_rank"
        assert _errors(report) == []
        assert "RM330" in {f.code for f in report.findings}  # right, current device stays 0


def test_a_rank_init_reached_only_on_an_undecided_branch_is_no_error(tmp_path: Path) -> None:
    """The worker runs only under `mp.spawn` when the script's own mode says so; the torchrun
    path (the launch checked) initialises from the launcher's variables."""
    body = (
        "import sys\nimport torch.multiprocessing as mp\n\n"
        "def spawned(gpu, n):\n    torch.cuda.set_device(gpu)\n"
        "    dist.init_process_group('nccl', init_method='tcp://10.0.0.1:23456', rank=gpu, "
        "world_size=n)\n\n"
        "def elastic():\n    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "    dist.init_process_group('nccl')\n\n"
        "if sys.argv[-1] == 'spawn':\n    mp.spawn(spawned, nprocs=8, args=(8,))\n"
        "else:\n    elastic()\n"
    )
    assert "RM905" not in [f.code for f in _errors(_report(tmp_path, body, 2))]
