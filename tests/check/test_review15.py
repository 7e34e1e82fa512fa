"""Review 15 (a black-box review with 50 launch setups written by a helper): scripts that map the
launcher's variables themselves, the `or` fallback rankmap suggests, literal arithmetic on the
rank. Shapes written here."""

from __future__ import annotations

from pathlib import Path

from test_task_shell import BY_ENV, SRUN, _check, _codes, _cuda

MAPS_ITSELF = {
    "assignment": "os.environ['LOCAL_RANK'] = os.environ['OMPI_COMM_WORLD_LOCAL_RANK']\n",
    "setdefault": "os.environ.setdefault('LOCAL_RANK', os.environ.get('OMPI_COMM_WORLD_LOCAL_RANK', "
    "'0'))\n",
    "update": "os.environ.update(LOCAL_RANK=os.environ['OMPI_COMM_WORLD_LOCAL_RANK'])\n",
    "guarded": "if 'OMPI_COMM_WORLD_LOCAL_RANK' in os.environ:\n"
    "    os.environ['LOCAL_RANK'] = os.environ['OMPI_COMM_WORLD_LOCAL_RANK']\n",
}


def test_a_script_that_copies_the_mpi_local_rank_into_local_rank_is_correct(
    tmp_path: Path,
) -> None:
    for name, mapping in MAPS_ITSELF.items():
        script = f"import os, torch\n{mapping}{BY_ENV.split(chr(10), 1)[1]}"
        report = _check(
            tmp_path, ["mpirun", "-np", "4", "python", "train.py"], {"train.py": script}
        )
        assert _codes(report) == [], name
        assert _cuda(report) == [0, 1, 2, 3], name


def test_a_literal_written_into_local_rank_is_only_a_default(tmp_path: Path) -> None:
    script = (
        "import os, torch\nif 'LOCAL_RANK' not in os.environ:\n    os.environ['LOCAL_RANK'] = '0'\n"
        "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    )
    report = _check(
        tmp_path, ["torchrun", "--nproc_per_node", "4", "train.py"], {"train.py": script}
    )
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]


def test_the_or_fallback_rankmap_itself_suggests_is_correct(tmp_path: Path) -> None:
    for var, argv in (
        ("SLURM_LOCALID", [*SRUN, "python", "train.py"]),
        ("OMPI_COMM_WORLD_LOCAL_RANK", ["mpirun", "-np", "4", "python", "train.py"]),
    ):
        script = (
            "import os, torch\n"
            f"local_rank = int(os.environ.get('LOCAL_RANK') or os.environ['{var}'])\n"
            "torch.cuda.set_device(local_rank)\n"
        )
        report = _check(tmp_path, argv, {"train.py": script})
        assert _codes(report) == [], var
        assert _cuda(report) == [0, 1, 2, 3], var
    # nothing of the chain set: the last read raises, as Python would
    report = _check(
        tmp_path,
        ["mpirun", "-np", "4", "python", "train.py"],
        {"train.py": script.replace("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")},
    )
    assert _codes(report) == ["RM903"]


def test_literal_arithmetic_on_the_rank_is_computed(tmp_path: Path) -> None:
    run = ["torchrun", "--nproc_per_node", "4", "train.py"]
    for expr, want in (("local_rank + 1", [1, 2, 3, 4]), ("2 * local_rank", [0, 2, 4, 6])):
        script = (
            "import os, torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
            f"torch.cuda.set_device({expr})\n"
        )
        report = _check(tmp_path, run, {"train.py": script})
        assert _codes(report) == ["RM102"], expr
        assert [p.cuda_index for p in report.placements] == want, expr
    modulo = (
        "import os, torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "torch.cuda.set_device((local_rank + 1) % torch.cuda.device_count())\n"
    )
    report = _check(tmp_path, run, {"train.py": modulo})
    assert _codes(report) == [] and _cuda(report) == [1, 2, 3, 0]


def test_spawning_one_worker_per_visible_gpu_is_that_many_workers(tmp_path: Path) -> None:
    script = (
        "import torch, torch.multiprocessing as mp\n"
        "def worker(i):\n    torch.cuda.set_device(i)\n"
        "if __name__ == '__main__':\n    mp.spawn(worker, nprocs=torch.cuda.device_count())\n"
    )
    report = _check(tmp_path, ["python", "train.py"], {"train.py": script})
    assert _codes(report) == [] and _cuda(report) == [0, 1, 2, 3]
    narrowed = ["env", "CUDA_VISIBLE_DEVICES=1,2", "python", "train.py"]
    report = _check(tmp_path, narrowed, {"train.py": script})
    assert _codes(report) == [] and _cuda(report) == [0, 1]


def test_concurrent_whole_jobs_and_sweeps_are_no_split_job(tmp_path: Path) -> None:
    halves = (
        "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 --master_port 29500 train.py &\n"
        "CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node 2 --master_port 29501 train.py &\n"
        "wait\n"
    )
    folds = (
        "for i in 0 1 2 3; do\n  CUDA_VISIBLE_DEVICES=$i torchrun --nproc_per_node 1 "
        "--master_port $((29500 + i)) train.py --fold $i &\ndone\nwait\n"
    )
    split = folds.replace(" --fold $i", "")
    for name, text, want in (
        ("halves", halves, []),
        ("folds", folds, []),
        ("split", split, ["RM902"]),
    ):
        report = _check(tmp_path, ["bash", "run.sh"], {"run.sh": text, "train.py": BY_ENV})
        assert _codes(report) == want, name
