"""Session 15: wrappers, per-process lists set by the script, containers, mp.spawn under a launcher, Slurm task counts and fix texts (reviews 53, 56). Shapes written here."""

from __future__ import annotations

from pathlib import Path

import pytest
from script_checks import ONE_GPU_PER_RANK as ONE_GPU_PER_RANK_SCRIPT
from script_checks import check_argv, fixes_of

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import check_launch
from rankmap.inventory import load_machine


def test_fix_count_goes_inside_the_quoted_inner_launch_not_onto_srun(tmp_path: Path) -> None:
    # srun gives the one task one GPU; torchrun inside `bash -c` starts 4 processes on it
    argv = ["srun", "--nodes", "1", "--ntasks-per-node", "1", "--gpus-per-task", "1",
            "bash", "-c", "torchrun --nproc_per_node 4 train.py"]  # fmt: skip
    report = check_argv(tmp_path, argv)
    fixes = fixes_of(report, "RM201")
    assert fixes, [f.code for f in report.ordered_findings()]
    assert all(
        "srun --nproc" not in fix and "--nproc-per-node 1 --nodes" not in fix for fix in fixes
    )
    assert any("--gres=gpu:4" in fix for fix in fixes)


def test_fix_count_still_edits_torchrun_when_srun_runs_it_directly(tmp_path: Path) -> None:
    argv = ["srun", "--nodes", "1", "--ntasks-per-node", "1", "--gpus-per-task", "1",
            "torchrun", "--nproc_per_node", "4", "train.py"]  # fmt: skip
    fixes = fixes_of(check_argv(tmp_path, argv), "RM201")
    assert any("torchrun --nproc_per_node 1 train.py" in fix for fix in fixes), fixes


MPI_LOCAL_RANK = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['OMPI_COMM_WORLD_LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _mpi_fixes(tmp_path: Path, *options: str) -> list[str]:
    argv = ["mpirun", "-np", "32", *options, "python", "train.py"]
    return fixes_of(check_argv(tmp_path, argv, nodes=2, script=MPI_LOCAL_RANK), "RM102")


def test_mpi_fix_moves_host_slots_with_the_process_count(tmp_path: Path) -> None:
    # -np 16 with -H a:16,b:16 would put all 16 on the first host (Open MPI fills slots in order)
    fixes = _mpi_fixes(tmp_path, "-H", "node1:16,node2:16")
    assert any("-np 16 -H node1:8,node2:8" in fix for fix in fixes), fixes


def test_mpi_fix_moves_the_per_node_count(tmp_path: Path) -> None:
    fixes = _mpi_fixes(tmp_path, "-npernode", "16")
    assert any("-np 16 -npernode 8" in fix for fix in fixes), fixes


def test_mpi_fix_names_the_hostfile_slots(tmp_path: Path) -> None:
    (tmp_path / "hosts").write_text("node1 slots=16\nnode2 slots=16\n")
    fixes = _mpi_fixes(tmp_path, "--hostfile", "hosts")
    assert any("slots=8 for each host in hosts" in fix for fix in fixes), fixes


SPAWN_ONE_PER_GPU = """import torch, torch.distributed as dist, torch.multiprocessing as mp
def worker(i, world):
    torch.cuda.set_device(i)
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", rank=i, world_size=world)
if __name__ == "__main__":
    n = torch.cuda.device_count()
    mp.spawn(worker, args=(n,), nprocs=n)
"""

SPAWN_ONLY_WITHOUT_LAUNCHER = """import os, torch, torch.multiprocessing as mp
def worker(i):
    torch.cuda.set_device(i)
def main():
    if "LOCAL_RANK" in os.environ:
        worker(int(os.environ["LOCAL_RANK"]))
    else:
        mp.spawn(worker, nprocs=torch.cuda.device_count())
if __name__ == "__main__":
    main()
"""

SPAWN_IN_A_FUNCTION_CALLED_CONDITIONALLY = """import os, torch, torch.multiprocessing as mp
def worker(i):
    torch.cuda.set_device(i)
def run_spawned():
    mp.spawn(worker, nprocs=4)
if __name__ == "__main__":
    if int(os.environ.get("WORLD_SIZE", "1")) == 1:
        run_spawned()
    else:
        worker(int(os.environ["LOCAL_RANK"]))
"""


def _codes(report) -> set[str]:  # type: ignore[no-untyped-def]
    return {f.code for f in report.ordered_findings()}


def test_unguarded_spawn_in_every_srun_task_multiplies_processes_onto_shared_gpus(
    tmp_path: Path,
) -> None:
    argv = ["srun", "--nodes", "1", "--ntasks-per-node", "8", "--gres", "gpu:8",
            "python", "train.py"]  # fmt: skip
    report = check_argv(tmp_path, argv, script=SPAWN_ONE_PER_GPU)
    nested = [f for f in report.ordered_findings() if f.code == "RM904"]
    assert nested and nested[0].severity.value == "error"
    assert "64 processes per node" in nested[0].title
    on_gpu0 = [p.rank for p in report.placements if p.pci_bus_id == "0000:18:00.0"]
    assert on_gpu0 == [0, 8, 16, 24, 32, 40, 48, 56]


def test_unguarded_spawn_under_torchrun_is_nested_too(tmp_path: Path) -> None:
    argv = ["torchrun", "--nproc_per_node", "2", "train.py"]
    report = check_argv(tmp_path, argv, script=SPAWN_ONE_PER_GPU.replace("nprocs=n", "nprocs=2"))
    assert "RM904" in _codes(report)
    assert len(report.placements) == 4


def test_spawn_only_when_no_launcher_started_the_process_is_left_alone(tmp_path: Path) -> None:
    argv = ["torchrun", "--nproc_per_node", "8", "train.py"]
    report = check_argv(tmp_path, argv, script=SPAWN_ONLY_WITHOUT_LAUNCHER)
    assert "RM904" not in _codes(report)
    assert len(report.placements) == 8


def test_spawn_in_a_function_called_under_a_condition_is_left_alone(tmp_path: Path) -> None:
    argv = ["torchrun", "--nproc_per_node", "4", "train.py"]
    report = check_argv(tmp_path, argv, script=SPAWN_IN_A_FUNCTION_CALLED_CONDITIONALLY)
    assert "RM904" not in _codes(report)
    assert len(report.placements) == 4


CVD_FROM_GLOBAL_RANK = """import os
rank = int(os.environ["RANK"])
os.environ["CUDA_VISIBLE_DEVICES"] = str(rank)
import torch, torch.distributed as dist
torch.cuda.set_device(0)
dist.init_process_group("nccl")
"""


def test_cvd_from_the_global_rank_hides_every_gpu_from_the_second_node_on(tmp_path: Path) -> None:
    argv = ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py"]
    report = check_argv(tmp_path, argv, nodes=2, script=CVD_FROM_GLOBAL_RANK)
    errors = [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert [f.code for f in errors] == ["RM401"]
    assert errors[0].category == "global_rank_as_device"
    assert list(errors[0].ranks) == list(range(8, 16))
    assert 'os.environ["LOCAL_RANK"]' in (errors[0].fix or "")


def test_cvd_from_the_global_rank_on_one_node_is_fine(tmp_path: Path) -> None:
    argv = ["torchrun", "--nproc_per_node", "8", "train.py"]
    report = check_argv(tmp_path, argv, script=CVD_FROM_GLOBAL_RANK)
    assert not [f for f in report.ordered_findings() if f.severity.value != "info"]


MPI_CONSTANT_DEVICE = """import os, torch, torch.distributed as dist
rank = int(os.environ["OMPI_COMM_WORLD_RANK"])
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method="tcp://node1:29400", rank=rank, world_size=8)
"""

BIND_WRAPPER = """#!/bin/bash
# one GPU per MPI rank
export CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK
exec "$@"
"""


def test_a_wrapper_that_binds_one_gpu_per_task_and_execs_its_arguments_is_read(
    tmp_path: Path,
) -> None:
    (tmp_path / "bind_gpu.sh").write_text(BIND_WRAPPER)
    argv = ["mpirun", "-np", "8", "./bind_gpu.sh", "python", "train.py"]
    report = check_argv(tmp_path, argv, script=MPI_CONSTANT_DEVICE)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert [p.pci_bus_id for p in report.placements][:2] == ["0000:18:00.0", "0000:2A:00.0"]


@pytest.mark.parametrize("wrapper", ["./not_here.sh", "/opt/site/bin/gpuwrap"])
@pytest.mark.parametrize("launcher", [["mpirun", "-np", "8"], ["srun", "--ntasks-per-node", "8"]])
def test_a_wrapper_that_cannot_be_read_leaves_the_gpus_unknown_not_an_error(
    tmp_path: Path, wrapper: str, launcher: list[str]
) -> None:
    report = check_argv(
        tmp_path, [*launcher, wrapper, "python", "train.py"], script=MPI_CONSTANT_DEVICE
    )
    findings = report.ordered_findings()
    assert not [f for f in findings if f.severity.value == "error"]
    assert any(f.code == "RM030" and "could not read it" in f.title for f in findings)


def test_a_known_transparent_wrapper_keeps_the_decided_error(tmp_path: Path) -> None:
    argv = ["srun", "--ntasks-per-node", "8", "numactl", "--cpunodebind=0", "python", "train.py"]
    report = check_argv(tmp_path, argv, script=MPI_CONSTANT_DEVICE)
    assert "RM302" in _codes(report)


def _own_cvd_then(select: str) -> str:
    return (
        "import os\n"
        "LOCAL_RANK = int(os.environ.get('LOCAL_RANK', 0))\n"
        "os.environ['CUDA_VISIBLE_DEVICES'] = str(LOCAL_RANK)\n"
        "import torch, torch.distributed as dist\n"
        f"torch.cuda.set_device({select})\n"
        "dist.init_process_group('nccl')\n"
    )


def test_own_cvd_per_process_then_cuda_local_rank_asks_for_gpus_it_hid(tmp_path: Path) -> None:
    argv = ["torchrun", "--nproc_per_node", "4", "train.py"]
    report = check_argv(tmp_path, argv, script=_own_cvd_then("LOCAL_RANK"))
    errors = [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert [(f.code, list(f.ranks)) for f in errors] == [("RM501", [1, 2, 3])]


@pytest.mark.parametrize("select", ["0", "LOCAL_RANK % torch.cuda.device_count()"])
def test_own_cvd_per_process_then_the_first_visible_gpu_is_right(
    tmp_path: Path, select: str
) -> None:
    argv = ["torchrun", "--nproc_per_node", "4", "train.py"]
    report = check_argv(tmp_path, argv, script=_own_cvd_then(select))
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert len({p.pci_bus_id for p in report.placements}) == 4


def _docker(*options: str, count: int = 4) -> list[str]:
    return ["docker", "run", "--rm", *options, "img:1", "torchrun", "--nproc_per_node", str(count),
            "train.py"]  # fmt: skip


def test_docker_gpus_device_list_is_what_the_container_sees_renumbered(tmp_path: Path) -> None:
    report = check_argv(tmp_path, _docker("--gpus", '"device=4,5,6,7"'))
    assert not [f for f in report.ordered_findings() if f.severity.value != "info"]
    assert [p.pci_bus_id for p in report.placements] == [
        "0000:9A:00.0", "0000:AB:00.0", "0000:BA:00.0", "0000:DB:00.0"]  # fmt: skip


def test_host_numbered_cvd_inside_a_container_hides_every_gpu(tmp_path: Path) -> None:
    report = check_argv(
        tmp_path, _docker("--gpus", '"device=4,5,6,7"', "-e", "CUDA_VISIBLE_DEVICES=4,5,6,7")
    )
    errors = [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert [f.code for f in errors] == ["RM203"]
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in (errors[0].fix or "")


def test_docker_gpus_count_gives_the_first_gpus_only(tmp_path: Path) -> None:
    report = check_argv(tmp_path, _docker("--gpus", "2"))
    assert "RM102" in _codes(report)


def test_the_callers_cvd_does_not_enter_a_docker_container(tmp_path: Path) -> None:
    argv = ["env", "CUDA_VISIBLE_DEVICES=0", *_docker("--gpus", "all")]
    report = check_argv(tmp_path, argv)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


NO_SET_DEVICE = """import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
model = torch.nn.Linear(8, 8).cuda()
"""

SPAWN_WITHOUT_SET_DEVICE = """import torch, torch.distributed as dist, torch.multiprocessing as mp
def worker(i, n):
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29500", rank=i, world_size=n)
    model = torch.nn.Linear(8, 8).cuda()
if __name__ == "__main__":
    mp.spawn(worker, args=(4,), nprocs=4)
"""


def test_the_fix_for_no_set_device_keeps_the_first_cuda_use(tmp_path: Path) -> None:
    report = check_argv(
        tmp_path, ["torchrun", "--nproc_per_node", "8", "train.py"], script=NO_SET_DEVICE
    )
    fixes = fixes_of(report, "RM301")
    assert fixes and all("replacing" not in fix and "and before" in fix for fix in fixes), fixes


def test_the_fix_under_mp_spawn_uses_the_spawn_index_not_local_rank(tmp_path: Path) -> None:
    report = check_argv(tmp_path, ["python", "train.py"], script=SPAWN_WITHOUT_SET_DEVICE)
    fixes = fixes_of(report, "RM301")
    assert fixes and all("LOCAL_RANK" not in fix and "set_device(index)" in fix for fix in fixes)


def test_deepspeed_num_gpus_with_include_says_to_drop_the_count(tmp_path: Path) -> None:
    argv = ["deepspeed", "--num_gpus", "4", "--include", "localhost:4,5,6,7", "train.py"]
    report = check_argv(tmp_path, argv)
    refused = [f for f in report.ordered_findings() if f.code == "RM921"]
    assert refused and "never both" in (refused[0].detail or "")
    assert "drop --num_gpus" in (refused[0].fix or "")


def test_mig_fix_does_not_send_several_ranks_to_slices_of_one_gpu(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(ONE_GPU_PER_RANK_SCRIPT)
    report = check_launch(
        ["torchrun", "--nproc_per_node", "7", "train.py"],
        machines=load_machine("a100-mig"),
        env={},
        nodes=1,
        cwd=tmp_path,
        files=LocalFiles(),
    )
    fixes = fixes_of(report, "RM602")
    assert fixes and all("at most 1 rank" in fix and "MIG- UUID" not in fix for fix in fixes)


ARGPARSE_RANK = """import argparse, torch, torch.distributed as dist
p = argparse.ArgumentParser()
p.add_argument("--rank", type=int, required=True)
p.add_argument("--world_size", type=int, required=True)
a = p.parse_args()
torch.cuda.set_device(0)
dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", rank=a.rank, world_size=a.world_size)
"""

LOOP_BY_RANK_OPTION = """#!/bin/bash
for i in $(seq 0 7); do
    CUDA_VISIBLE_DEVICES=$((i % 4)) python train.py --rank $i --world_size 8 &
done
wait
"""


def test_lines_that_pass_their_script_a_rank_are_one_world_started_by_hand(tmp_path: Path) -> None:
    job = tmp_path / "job.sh"
    job.write_text(LOOP_BY_RANK_OPTION.replace("% 4", "% 8"))
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=ARGPARSE_RANK)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]
    job.write_text(LOOP_BY_RANK_OPTION)
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=ARGPARSE_RANK)
    shared = [f for f in report.ordered_findings() if f.code == "RM503"]
    assert shared and list(shared[0].ranks) == [0, 4]


@pytest.mark.parametrize(
    "header",
    [
        "for i in $(seq 0 $((NGPU-1))); do",
        "for i in $(seq 0 $LAST); do",
        "for i in $(seq $NGPU); do",
    ],
)
def test_seq_bounds_from_variables_and_arithmetic_are_followed(tmp_path: Path, header: str) -> None:
    job = tmp_path / "job.sh"
    start = "1" if header.endswith("$(seq $NGPU); do") else "0"
    job.write_text(
        "#!/bin/bash\nNGPU=4\nLAST=3\n"
        f"{header}\n"
        f"  CUDA_VISIBLE_DEVICES=$((i - {start})) python train.py --rank $((i - {start})) --world_size 4 &\n"
        "done\nwait\n"
    )
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=ARGPARSE_RANK)
    assert len(report.placements) == 4
    assert len({p.pci_bus_id for p in report.placements}) == 4


def test_a_seq_bound_known_only_at_run_time_stays_unknown(tmp_path: Path) -> None:
    report = _script_job(
        tmp_path,
        "for i in $(seq 0 $(($(nvidia-smi -L | wc -l)-1))); do\n"
        "  CUDA_VISIBLE_DEVICES=$i python train.py --rank $i --world_size 4 &\ndone\nwait\n",
        ARGPARSE_RANK,
    )
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def _script_job(tmp_path: Path, body: str, script: str):  # type: ignore[no-untyped-def]
    """``check`` of a bash launch script ``body`` run from ``tmp_path`` with ``script``."""
    job = tmp_path / "job.sh"
    job.write_text("#!/bin/bash\n" + body)
    return check_argv(tmp_path, [], nodes=None, shell_file=job, script=script)


def test_a_fix_keeps_a_computed_value_unquoted_as_the_scripts_own(tmp_path: Path) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
        "MASTER=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n1)\n"
        "srun torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d "
        "--rdzv_endpoint ${MASTER}:29500 train.py\n"
    )
    report = check_argv(tmp_path, [], nodes=2, shell_file=job)
    fixes = fixes_of(report, "RM904")
    assert fixes and all("'$(" not in fix and "$(…):29500" in fix for fix in fixes), fixes


@pytest.mark.parametrize("tasks", [["-N", "2", "-n", "2"], ["--nodes=2", "--ntasks=2"]])
def test_srun_ntasks_takes_precedence_over_the_jobs_tasks_per_node(
    tmp_path: Path, tasks: list[str]
) -> None:
    job = tmp_path / "job.sbatch"
    job.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=8\n#SBATCH --gpus-per-node=8\n"
        f"srun {' '.join(tasks)} torchrun --nnodes=2 --nproc_per_node=8 --rdzv_backend=c10d "
        "--rdzv_endpoint=node1:29500 train.py\n"
    )
    report = check_argv(tmp_path, [], nodes=2, shell_file=job)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert len(report.placements) == 16


def test_a_computed_process_count_with_every_gpu_hidden_is_a_finding_not_a_refusal(
    tmp_path: Path,
) -> None:
    job = tmp_path / "train.sh"
    job.write_text(
        "#!/bin/bash\nGPUS=${GPUS:-9,10}\nexport CUDA_VISIBLE_DEVICES=$GPUS\n"
        "NPROC=$(awk -F, '{print NF}' <<< \"$GPUS\")\n"
        "torchrun --nproc_per_node=$NPROC train.py\n"
    )
    report = check_argv(tmp_path, [], nodes=None, shell_file=job)
    blind = [f for f in report.ordered_findings() if f.code == "RM203"]
    assert blind and "sees no GPU" in blind[0].title


def test_accelerate_machine_rank_from_each_node_overrides_the_config_file(tmp_path: Path) -> None:
    (tmp_path / "cfg.yaml").write_text(
        "compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nmachine_rank: 0\n"
        "num_machines: 2\nnum_processes: 16\nmain_process_port: 29555\n"
    )
    report = _two_nodes(
        tmp_path,
        "srun bash -c 'accelerate launch --config_file cfg.yaml --main_process_ip node1 "
        "--machine_rank $SLURM_NODEID train.py'\n",
    )
    assert "RM804" not in _codes(report)
    assert len(report.placements) == 16


def test_srun_around_torchrun_with_a_runtime_node_rank_is_simulated_not_refused(
    tmp_path: Path,
) -> None:
    argv = ["srun", "--nodes=2", "--ntasks-per-node=8", "--gpus-per-node=8", "torchrun",
            "--nnodes=2", "--nproc_per_node=8", "--node_rank=$SLURM_NODEID",
            "--master_addr=$MASTER_ADDR", "train.py"]  # fmt: skip
    report = check_argv(tmp_path, argv, nodes=2)
    assert {"RM904", "RM032"} <= _codes(report)


@pytest.mark.parametrize("address", ["$(hostname)", "`hostname -s`", "$HOSTNAME"])
def test_a_master_address_each_node_computes_as_itself_is_rm906(
    tmp_path: Path, address: str
) -> None:
    report = _two_nodes(
        tmp_path,
        "srun bash -c 'torchrun --nnodes=2 --nproc_per_node=8 --node_rank=$SLURM_NODEID "
        f"--master_addr={address} --master_port=29500 train.py'\n",
    )
    found = [f for f in report.ordered_findings() if f.code == "RM906"]
    assert found and found[0].severity.value == "error"


def test_a_master_address_computed_once_by_the_batch_shell_is_fine(tmp_path: Path) -> None:
    report = _two_nodes(
        tmp_path,
        "export MASTER=$(hostname)\n"
        "srun bash -c 'torchrun --nnodes=2 --nproc_per_node=8 --node_rank=$SLURM_NODEID "
        "--master_addr=$MASTER --master_port=29500 train.py'\n",
    )
    assert "RM906" not in _codes(report)


SPAWN_BY_ENV = """import os, torch, torch.distributed as dist, torch.multiprocessing as mp
def worker(rank, world):
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
if __name__ == "__main__":
    world_size = int(os.environ.get("WORLD_SIZE", 1))
    mp.spawn(worker, args=(world_size,), nprocs=world_size)
"""


def test_a_spawn_count_read_from_the_launchs_environment_is_followed(tmp_path: Path) -> None:
    job = tmp_path / "go.sh"
    job.write_text("#!/bin/bash\nexport WORLD_SIZE=16\npython train.py\n")
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=SPAWN_BY_ENV)
    assert "RM102" in _codes(report)  # 16 workers on the 8 GPUs of a DGX H100
    job.write_text("#!/bin/bash\npython train.py\n")  # not set by the launch: not guessed
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=SPAWN_BY_ENV)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_the_rm401_fix_names_where_the_global_rank_is_read(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("")
    (tmp_path / "lib" / "env.py").write_text(
        "import torch, torch.distributed as dist\n\n"
        "def get_device():\n"
        "    dev = torch.device('cuda', dist.get_rank())\n"
        "    torch.cuda.set_device(dev)\n"
        "    return dev\n"
    )
    script = (
        "import torch.distributed as dist\nfrom lib.env import get_device\n"
        "dist.init_process_group('nccl')\ndevice = get_device()\n"
    )
    argv = ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train.py"]
    fixes = fixes_of(check_argv(tmp_path, argv, nodes=2, script=script), "RM401")
    assert fixes and all("env.py:4" in fix for fix in fixes), fixes


SPAWN_BY_INDEX = """import torch, torch.distributed as dist, torch.multiprocessing as mp
def worker(index):
    torch.cuda.set_device(index)
    dist.init_process_group("nccl")
if __name__ == "__main__":
    mp.spawn(worker, nprocs=torch.cuda.device_count())
"""

SPAWN_CPU_WORKERS = """import os, torch, torch.distributed as dist, torch.multiprocessing as mp
def tokenize(i):
    return i
if __name__ == "__main__":
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    mp.spawn(tokenize, nprocs=4)
    dist.init_process_group("nccl")
"""


@pytest.mark.parametrize(
    ("argv", "script"),
    [
        # one GPU per task: each task's single worker uses its own cuda:0
        (
            ["srun", "--ntasks-per-node=8", "--gpus-per-task=1", "python", "train.py"],
            SPAWN_BY_INDEX,
        ),
        # one process per node spawning one worker per GPU
        (["srun", "-N", "2", "--ntasks-per-node=1", "python", "train.py"], SPAWN_BY_INDEX),
        # CPU-only workers next to the launcher's own ranks
        (["torchrun", "--nproc-per-node", "8", "train.py"], SPAWN_CPU_WORKERS),
    ],
)
def test_spawns_that_do_not_share_gpus_are_no_error(
    tmp_path: Path, argv: list[str], script: str
) -> None:
    report = check_argv(tmp_path, argv, nodes=2 if "-N" in argv else 1, script=script)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_a_script_option_named_rank_alone_is_no_world(tmp_path: Path) -> None:
    job = tmp_path / "sweep.sh"
    job.write_text(
        "#!/bin/bash\nCUDA_VISIBLE_DEVICES=0 python train.py --rank 8 &\n"
        "CUDA_VISIBLE_DEVICES=0 python train.py --rank 16 &\nwait\n"
    )
    script = "import torch\nmodel = torch.nn.Linear(4, 4).cuda()\n"  # a LoRA rank, no process group
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=script)
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_a_huge_docker_gpu_count_is_not_expanded(tmp_path: Path) -> None:
    report = check_argv(tmp_path, _docker("--gpus", "99999999999", count=2))
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_a_tool_from_path_before_python_is_no_unread_binding_wrapper(tmp_path: Path) -> None:
    argv = ["srun", "--ntasks-per-node", "8", "timeout", "2h", "python", "train.py"]
    report = check_argv(tmp_path, argv, script=MPI_CONSTANT_DEVICE)
    assert "RM302" in _codes(report)


def test_the_cvd_fix_under_srun_around_torchrun_uses_torchruns_local_rank(tmp_path: Path) -> None:
    argv = ["srun", "-N", "2", "--ntasks-per-node=1", "torchrun", "--nnodes", "2",
            "--nproc-per-node", "8", "train.py"]  # fmt: skip
    report = check_argv(tmp_path, argv, nodes=2, script=CVD_FROM_GLOBAL_RANK)
    fixes = fixes_of(report, "RM401")
    assert fixes and all('os.environ["LOCAL_RANK"]' in fix for fix in fixes), fixes


def test_hostname_expanded_once_by_the_batch_shell_in_double_quotes_is_fine(tmp_path: Path) -> None:
    report = _two_nodes(
        tmp_path,
        'srun bash -c "torchrun --nnodes=2 --nproc_per_node=8 --node_rank=\\$SLURM_NODEID '
        '--master_addr=$(hostname) --master_port=29500 train.py"\n',
    )
    assert "RM906" not in _codes(report)


def test_one_single_node_job_per_node_at_its_own_address_is_fine(tmp_path: Path) -> None:
    report = _two_nodes(
        tmp_path,
        "srun bash -c 'torchrun --nnodes 1 --nproc-per-node 8 --master_addr=$(hostname) "
        "--master_port 29500 train.py --seed $SLURM_NODEID'\n",
    )
    assert not {"RM906", "RM920"} & _codes(report)


LOCAL_RANK_ENV = (
    "import os, torch, torch.distributed as dist\n"
    "local = int(os.environ['LOCAL_RANK'])\n"
    "torch.cuda.set_device(local)\n"
    "dist.init_process_group('nccl')\n"
)


@pytest.mark.parametrize(
    ("prelude", "header", "expected"),
    [
        ("GPUS=(0 1 2 3)\n", "for i in $(seq 0 $((${#GPUS[@]}-1))); do", 4),
        ("", "for i in $(seq 3 -1 0); do", 4),
    ],
)
def test_seq_counts_down_and_over_array_lengths(
    tmp_path: Path, prelude: str, header: str, expected: int
) -> None:
    job = tmp_path / "job.sh"
    job.write_text(
        f"#!/bin/bash\nexport MASTER_ADDR=127.0.0.1 MASTER_PORT=29500\n{prelude}{header}\n"
        "  RANK=$i LOCAL_RANK=$i WORLD_SIZE=4 python train.py &\ndone\nwait\n"
    )
    report = check_argv(tmp_path, [], nodes=None, shell_file=job, script=LOCAL_RANK_ENV)
    assert len(report.placements) == expected
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]


def test_a_rank_the_loop_computes_at_run_time_is_unknown_not_a_value_error(tmp_path: Path) -> None:
    report = _script_job(
        tmp_path,
        "NGPU=$(nvidia-smi -L | wc -l)\nfor i in $(seq 0 $((NGPU-1))); do\n"
        "  RANK=$i LOCAL_RANK=$i WORLD_SIZE=$NGPU python train.py &\ndone\nwait\n",
        LOCAL_RANK_ENV,
    )
    assert not [f for f in report.ordered_findings() if f.severity.value == "error"]
    assert "RM030" in _codes(report)


def test_the_header_names_an_imported_module_with_the_scripts_own_name(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "train.py").write_text(
        "import os, torch\n\n\n\n\ndef setup():\n"
        "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    )
    script = "import torch.distributed as dist\nfrom pkg.train import setup\nsetup()\n"
    report = check_argv(tmp_path, ["torchrun", "--nproc_per_node", "8", "train.py"], script=script)
    assert report.sections["launch"]["device_selection_file"] == "pkg/train.py"


def _two_nodes(tmp_path: Path, srun_lines: str):  # type: ignore[no-untyped-def]
    """``check`` of a batch script of two 8-GPU nodes, one task each, running ``srun_lines``."""
    job = tmp_path / "job.sbatch"
    job.write_text(
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
        + srun_lines
    )
    return check_argv(tmp_path, [], nodes=2, shell_file=job)


@pytest.mark.parametrize(
    "loop",
    [
        "for i in __SEQ_99; do",
        "for i in __SEQ_zz_1_2__; do",
        "for i in __SEQ_99__x__; do",
        "for i in $(seq 0 $((N-1))) __AR_9__; do",
    ],  # fmt: skip
)
def test_words_that_look_like_the_readers_markers_are_no_crash(loop: str) -> None:
    from rankmap.launchers.shell import parse_shell

    script = parse_shell(f"N=2\n{loop}\n  torchrun --nproc_per_node 1 t.py\ndone\n", "x.sh", {})
    assert script.launches  # read, not a ValueError
