"""Review 11: shapes of correct launches that check called errors (shapes written here)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine

FILES = LocalFiles()
DDP = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)
SINGLE = "import torch\nmodel = torch.nn.Linear(4, 4).to('cuda')\n"


def _run(tmp_path: Path, files: dict[str, str], argv: list[str], machine: str) -> Any:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return check_launch(argv, machines=load_machine(machine), env={}, cwd=tmp_path, files=FILES)


def _errors(report: Any) -> list[str]:
    return [f.code for f in report.ordered_findings() if f.severity.value == "error"]


def test_lines_that_run_one_after_another_are_separate_jobs(tmp_path: Path) -> None:
    run = (
        "python prep.py --out data/\n"
        "torchrun --nproc_per_node 4 train.py\n"
        "python eval.py --ckpt last.pt\n"
    )
    files = {"run.sh": run, "prep.py": "print('prep')\n", "train.py": DDP, "eval.py": SINGLE}
    report = _run(tmp_path, files, ["bash", "run.sh"], "workstation-4gpu")
    assert _errors(report) == []
    launch = report.sections["launch"]
    assert launch["launcher"] == "torchrun" and launch["world_size"] == 4
    assert any("do not run at once" in n for n in report.sections["launch"].get("notes", []))


def test_a_sweep_of_single_gpu_runs_is_no_job_split_in_worlds(tmp_path: Path) -> None:
    sweep = (
        "for i in 0 1 2 3; do\n"
        "  CUDA_VISIBLE_DEVICES=$i python train_single.py --lr 1e-$i > log$i.txt 2>&1 &\n"
        "done\nwait\n"
    )
    files = {"sweep.sh": sweep, "train_single.py": SINGLE}
    report = _run(tmp_path, files, ["bash", "sweep.sh"], "workstation-4gpu")
    assert _errors(report) == []


def test_single_process_torchruns_in_a_loop_are_still_one_job_split(tmp_path: Path) -> None:
    loop = (
        "for i in 0 1 2 3; do\n"
        "  CUDA_VISIBLE_DEVICES=$i torchrun --nproc_per_node 1 --master_port $((29500+i)) "
        "train.py &\ndone\nwait\n"
    )
    report = _run(
        tmp_path, {"loop.sh": loop, "train.py": DDP}, ["bash", "loop.sh"], "workstation-4gpu"
    )
    assert "RM902" in _errors(report)


def test_one_world_started_line_by_line_is_no_split_and_no_port_clash(tmp_path: Path) -> None:
    two = "".join(
        f"CUDA_VISIBLE_DEVICES={cvd} torchrun --nnodes 2 --node_rank {k} --nproc_per_node 2 "
        "--master_addr 127.0.0.1 --master_port 29500 train.py &\n"
        for k, cvd in ((0, "0,1"), (1, "2,3"))
    )
    report = _run(
        tmp_path,
        {"two.sh": two + "wait\n", "train.py": DDP},
        ["bash", "two.sh"],
        "workstation-4gpu",
    )
    codes = {f.code for f in report.ordered_findings()}
    assert not codes & {"RM902", "RM906", "RM804"}


def test_mig_instances_of_one_gpu_in_one_world_by_hand_are_mig(tmp_path: Path) -> None:
    migs = ("MIG-5e1f0a37-2c4b-5d8e-9f61-7a3b2c9d0e14", "MIG-3274418e-8451-5f27-a7e4-1cb9d6001119")
    lines = "".join(
        f"CUDA_VISIBLE_DEVICES={m} torchrun --nnodes 2 --node_rank {k} --nproc_per_node 1 "
        "--master_addr 127.0.0.1 --master_port 29500 train.py &\n"
        for k, m in enumerate(migs)
    )
    machine = load_machine("a100-mig")
    uuids = [d.uuid for d in machine[0].gpus[0].mig_devices][:2]
    for real, fake in zip(uuids, migs, strict=True):
        lines = lines.replace(fake, real)
    report = _run(
        tmp_path, {"mig.sh": lines + "wait\n", "train.py": DDP}, ["bash", "mig.sh"], "a100-mig"
    )
    assert _errors(report)[0] == "RM601"
    sweep = lines.replace("--nnodes 2 --node_rank 0 ", "").replace("--nnodes 2 --node_rank 1 ", "")
    sweep = sweep.replace("--master_port 29500 train.py &\n", "--master_port 2950{} train.py &\n")
    sweep = "".join(line.format(i) for i, line in enumerate(sweep.splitlines(True)))
    report = _run(tmp_path, {"sweep.sh": sweep + "wait\n"}, ["bash", "sweep.sh"], "a100-mig")
    assert "RM601" not in _errors(report) and "RM503" not in _errors(report)


def test_a_default_replaced_in_a_loop_is_unknown_not_constant(tmp_path: Path) -> None:
    searched = (
        "import os, torch, torch.distributed as dist\n"
        "local_rank = 0\n"
        "for name in ('LOCAL_RANK', 'OMPI_COMM_WORLD_LOCAL_RANK'):\n"
        "    if name in os.environ:\n"
        "        local_rank = int(os.environ[name])\n"
        "        break\n"
        "torch.cuda.set_device(local_rank)\n"
        "dist.init_process_group('nccl')\n"
    )
    report = _run(
        tmp_path,
        {"train.py": searched},
        ["torchrun", "--nproc_per_node", "8", "train.py"],
        "dgx-h100",
    )
    assert _errors(report) == []
    assert "RM030" in {f.code for f in report.ordered_findings()}
    constant = "import torch, torch.distributed as dist\ntorch.cuda.set_device(0)\ndist.init_process_group('nccl')\n"
    report = _run(
        tmp_path,
        {"train.py": constant},
        ["torchrun", "--nproc_per_node", "8", "train.py"],
        "dgx-h100",
    )
    assert _errors(report) == ["RM302"]


SPAWN = (
    "import os, torch, torch.distributed as dist, torch.multiprocessing as mp\n"
    "WORLD = {n}\n"
    "def worker(rank, world):\n"
    "    os.environ['MASTER_ADDR'] = 'localhost'\n"
    "    os.environ['MASTER_PORT'] = '12355'\n"
    "    dist.init_process_group('nccl', rank=rank, world_size=world)\n"
    "    torch.cuda.set_device(rank)\n"
    "if __name__ == '__main__':\n"
    "    mp.spawn(worker, args=(WORLD,), nprocs=WORLD)\n"
)


def test_workers_a_script_spawns_are_its_ranks(tmp_path: Path) -> None:
    too_many = _run(
        tmp_path, {"spawn.py": SPAWN.format(n=8)}, ["python", "spawn.py"], "workstation-4gpu"
    )
    assert _errors(too_many) == ["RM102"]
    assert too_many.sections["launch"]["world_size"] == 8
    first = too_many.ordered_findings()[0]
    assert first.ranks == (4, 5, 6, 7) and "nprocs=4 at" in first.fix
    fits = _run(
        tmp_path, {"spawn.py": SPAWN.format(n=4)}, ["python", "spawn.py"], "workstation-4gpu"
    )
    assert _errors(fits) == [] and fits.sections["launch"]["world_size"] == 4
    per_gpu = SPAWN.format(n="torch.cuda.device_count()")
    assert (
        _errors(_run(tmp_path, {"spawn.py": per_gpu}, ["python", "spawn.py"], "workstation-4gpu"))
        == []
    )
    unread = SPAWN.format(n="int(os.environ['NGPU']) * 2")
    report = _run(tmp_path, {"spawn.py": unread}, ["python", "spawn.py"], "workstation-4gpu")
    assert _errors(report) == []
    assert any(
        "the map shows the parent process only" in n for n in report.sections["launch"]["notes"]
    )


LIGHTNING = (
    "import argparse\nimport lightning.pytorch as pl\n"
    "ap = argparse.ArgumentParser()\nap.add_argument('--gpus', type=int, default=4)\n"
    "args = ap.parse_args()\n"
    "trainer = pl.Trainer(accelerator='gpu', devices=args.gpus, strategy='ddp')\n"
    "trainer.fit(model)\n"
)


def test_lightning_devices_in_a_plain_python_launch_are_its_ranks(tmp_path: Path) -> None:
    files = {"lit.py": LIGHTNING}
    too_many = _run(tmp_path, files, ["python", "lit.py", "--gpus", "8"], "workstation-4gpu")
    assert _errors(too_many) == ["RM102"]
    assert "devices=4 at" in too_many.ordered_findings()[0].fix
    assert _errors(_run(tmp_path, files, ["python", "lit.py"], "workstation-4gpu")) == []


def test_a_variable_torchrun_does_not_set_is_rm903(tmp_path: Path) -> None:
    slurm_only = (
        "import os, torch, torch.distributed as dist\n"
        "torch.cuda.set_device(int(os.environ['SLURM_LOCALID']))\n"
        "dist.init_process_group('nccl')\n"
    )
    argv = ["torchrun", "--nproc_per_node", "8", "train.py"]
    report = _run(tmp_path, {"train.py": slurm_only}, argv, "dgx-h100")
    assert _errors(report) == ["RM903"]  # not RM905, which is two processes claiming one rank
