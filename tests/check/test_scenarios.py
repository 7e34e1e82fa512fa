"""The scenario table: each launcher x each category it can produce, healthy ones included.

Every row runs ``check_launch`` on built-in machine profiles and asserts the first error finding
(code and category), its ranks and devices, and a predicted error line.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rankmap.adapters.local import check_launch
from rankmap.findings import Report
from rankmap.inventory import load_machine

DATA = Path(__file__).parents[1] / "data" / "check"
MIG0 = "MIG-5e1f0a37-2c4b-5d8e-9f61-7a3b2c9d0e14"
MIG1 = "MIG-3274418e-8451-5f27-a7e4-1cb9d6001119"
H100_GPU0 = "0000:18:00.0"


@dataclass(frozen=True)
class Case:
    id: str
    argv: list[str]
    machines: tuple[str, ...] = ("dgx-h100",)
    env: dict[str, str] = field(default_factory=dict)
    nodes: int | None = None
    shell: str | None = None
    code: str | None = None  # first finding's code; None: must stay clean (no error)
    category: str | None = None
    ranks: list[int] | None = None
    devices: list[str] | None = None
    predicted: str | None = None  # a line that predicted_errors must contain
    world_size: int | None = None
    warning: str | None = None  # a code that must be present (healthy-with-warning cases)


TR = ["torchrun", "--nproc_per_node"]
CASES = [
    # --- torchrun ---------------------------------------------------------------------------
    Case("torchrun-healthy", [*TR, "8", "train_local.py"], world_size=8),
    Case(
        "torchrun-cvd-modulo",
        [*TR, "8", "train_modulo.py"],
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
        code="RM201",
        category="visible_devices_mismatch",
        ranks=[0, 4],
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 18000",
    ),
    Case(
        "torchrun-cvd-ordinal",
        [*TR, "8", "train_local.py"],
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
        code="RM201",
        category="visible_devices_mismatch",
        ranks=[4, 5, 6, 7],
        predicted="RuntimeError: CUDA error: invalid device ordinal",
    ),
    Case(
        "torchrun-too-many-ordinal",
        ["torchrun", "--nproc-per-node=8", "train_local.py"],
        machines=("workstation-4gpu",),
        code="RM102",
        category="oversubscribed",
        ranks=[4, 5, 6, 7],
        predicted="invalid device ordinal",
    ),
    Case(
        "torchrun-too-many-modulo",
        [*TR, "8", "train_modulo.py"],
        machines=("workstation-4gpu",),
        code="RM101",
        category="oversubscribed",
        ranks=[0, 4],
        devices=["0000:4F:00.0"],
        predicted="Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 4f000",
    ),
    Case(
        "torchrun-no-set-device",
        [*TR, "8", "train_nodevice.py"],
        code="RM301",
        category="no_set_device",
        ranks=list(range(8)),
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 18000",
    ),
    Case(
        "torchrun-constant",
        [*TR, "4", "train_const.py"],
        code="RM302",
        category="no_set_device",
        ranks=[0, 1, 2, 3],
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 18000",
    ),
    Case(
        "torchrun-global-rank-2-nodes",
        ["torchrun", "--nnodes", "2", "--nproc_per_node", "8", "train_rank.py"],
        nodes=2,
        code="RM401",
        category="global_rank_as_device",
        ranks=list(range(8, 16)),
        predicted="invalid device ordinal",
    ),
    Case(
        "torchrun-global-rank-modulo-2-nodes",
        ["torchrun", "--nnodes=2", "--nproc_per_node=8", "train_rank_mod.py"],
        nodes=2,
        world_size=16,
    ),
    Case(
        "torchrun-2-nodes-healthy",
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train_local.py"],
        nodes=2,
        world_size=16,
    ),
    Case(
        "torchrun-nccl-hostid",
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train_local.py"],
        nodes=2,
        env={"NCCL_HOSTID": "cluster"},
        code="RM801",
        category="host_identity",
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 0 and rank 8 both on CUDA device 18000",
    ),
    Case(
        "torchrun-same-machine-twice",
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train_local.py"],
        machines=("dgx-h100", "dgx-h100"),
        code="RM801",
        category="host_identity",
        predicted="Duplicate GPU detected : rank 8 and rank 0 both on CUDA device 18000",
    ),
    Case(
        "torchrun-virtual-local-rank",
        ["torchrun", "--nproc-per-node", "4", "--virtual-local-rank", "train_local.py"],
        env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"},
        world_size=4,
        warning="RM502",
    ),
    Case(
        "torchrun-virtual-local-rank-short",
        ["torchrun", "--nproc-per-node", "4", "--virtual-local-rank", "train_local.py"],
        env={"CUDA_VISIBLE_DEVICES": "0,1"},
        code="RM201",
        category="visible_devices_mismatch",
        predicted="local_rank 2 exceeds available GPUs in CUDA_VISIBLE_DEVICES=0,1",
    ),
    Case(
        "torchrun-cvd-repeated",
        [*TR, "2", "train_local.py"],
        env={"CUDA_VISIBLE_DEVICES": "0,0"},
        code="RM203",
        category="visible_devices_mismatch",
        ranks=[0, 1],
        predicted="RuntimeError: No CUDA GPUs are available",
    ),
    Case(
        "torchrun-mig-slices",
        ["torchrun", "--nproc-per-node", "2", "--virtual-local-rank", "train_local.py"],
        machines=("a100-mig",),
        env={"CUDA_VISIBLE_DEVICES": f"{MIG0},{MIG1}"},
        code="RM601",
        category="mig",
        ranks=[0, 1],
        devices=["0000:07:00.0"],
        predicted="Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 7000",
    ),
    Case(
        "torchrun-mixed-order",
        [*TR, "1", "train_local.py"],
        machines=("mixed-2gpu",),
        env={"CUDA_VISIBLE_DEVICES": "0"},
        world_size=1,
        warning="RM204",
    ),
    Case(
        "torchrun-args-local-rank-not-passed",
        [*TR, "4", "train_args.py"],
        code="RM901",
        category="launcher_config",
        ranks=[0, 1, 2, 3],
        devices=[H100_GPU0],
    ),
    Case(
        "torchrun-fixed-node-rank",
        [
            "torchrun",
            "--nnodes",
            "2",
            "--node-rank",
            "0",
            "--nproc-per-node",
            "8",
            "train_local.py",
        ],
        nodes=2,
        world_size=16,
        warning="RM804",
    ),
    Case(
        "torchrun-nnodes-mismatch",
        ["torchrun", "--nnodes", "4", "--nproc-per-node", "8", "train_local.py"],
        nodes=2,
        code="RM920",
        category="launcher_config",
    ),
    Case("torchrun-device-id", [*TR, "8", "train_device_id.py"], world_size=8),
    Case(
        "torchrun-device-map-auto",
        [*TR, "2", "train_devmap.py"],
        code="RM301",
        category="no_set_device",
        ranks=[0, 1],
    ),
    Case("torchrun-syntax-error", [*TR, "8", "train_broken.py"], world_size=8, warning="RM004"),
    Case(
        "python-m-run-healthy",
        ["python", "-m", "torch.distributed.run", "--nproc_per_node", "8", "train_local.py"],
        world_size=8,
    ),
    # --- legacy torch.distributed.launch ------------------------------------------------------
    Case(
        "launch-underscore-only",
        ["python", "-m", "torch.distributed.launch", "--nproc_per_node", "2", "train_args.py"],
        code="RM901",
        category="launcher_config",
        ranks=[0, 1],
        predicted="error: unrecognized arguments: --local-rank=0",
    ),
    Case(
        "launch-both-spellings",
        ["python", "-m", "torch.distributed.launch", "--nproc_per_node", "8", "train_args_both.py"],
        world_size=8,
    ),
    Case(
        "launch-use-env",
        [
            "python",
            "-m",
            "torch.distributed.launch",
            "--use_env",
            "--nproc_per_node",
            "8",
            "train_local.py",
        ],
        world_size=8,
    ),
    # --- accelerate ----------------------------------------------------------------------------
    Case(
        "accelerate-8-on-4-gpu-ids",
        ["accelerate", "launch", "--config_file", "accel_8_on_4.yaml", "train_accel.py"],
        code="RM201",
        category="visible_devices_mismatch",
        ranks=[0, 4],
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 18000",
    ),
    Case(
        "accelerate-one-gpu-id",
        [
            "accelerate",
            "launch",
            "--multi_gpu",
            "--num_processes",
            "2",
            "--gpu_ids",
            "0",
            "train_accel.py",
        ],
        code="RM923",
        category="launcher_config",
        predicted="Less than two GPU ids were configured and tried to run on multiple GPUs.",
    ),
    Case(
        "accelerate-default-config",
        ["accelerate", "launch", "train_accel.py"],
        env={"HF_HOME": str(DATA / "hf")},
        world_size=8,
    ),
    Case(
        "accelerate-flags-healthy",
        [
            "accelerate",
            "launch",
            "--multi_gpu",
            "--num_processes=4",
            "--gpu_ids",
            "4,5,6,7",
            "train_accel.py",
        ],
        world_size=4,
    ),
    # --- deepspeed -----------------------------------------------------------------------------
    Case(
        "deepspeed-cvd-no-slot",
        ["deepspeed", "train_local.py"],
        env={"CUDA_VISIBLE_DEVICES": "4,5,6,7"},
        code="RM921",
        category="launcher_config",
        predicted="No slot '4' specified on host 'localhost'",
    ),
    Case(
        "deepspeed-include-healthy",
        ["deepspeed", "--include", "localhost:1,3", "train_local.py"],
        world_size=2,
    ),
    Case(
        "deepspeed-num-gpus-ignores-cvd",
        ["deepspeed", "--num_gpus", "2", "train_local.py"],
        env={"CUDA_VISIBLE_DEVICES": "2,3"},
        world_size=2,
        warning="RM922",
    ),
    Case(
        "deepspeed-hostfile-healthy",
        ["deepspeed", "-H", "ds_hostfile", "train_args_both.py"],
        world_size=16,
    ),
    Case(
        "deepspeed-hostfile-same-machine",
        ["deepspeed", "-H", "ds_hostfile", "train_local.py"],
        machines=("dgx-h100", "dgx-h100"),
        code="RM801",
        category="host_identity",
        predicted="Duplicate GPU detected : rank 0 and rank 8 both on CUDA device 18000",
    ),
    Case(
        "deepspeed-include-constant",
        ["deepspeed", "--include", "localhost:1", "train_const.py"],
        world_size=1,
    ),
    # --- srun / sbatch -------------------------------------------------------------------------
    Case(
        "srun-gpus-per-task-localid",
        ["srun", "-N", "2", "--ntasks-per-node=4", "--gpus-per-task=1", "python", "train_slurm.py"],
        code="RM501",
        category="per_process_visible_devices",
        ranks=[1, 2, 3, 5, 6, 7],
        predicted="invalid device ordinal",
    ),
    Case(
        # an explicit --gpu-bind overrides the binding --gpus-per-task implies: every task sees
        # the node's 4 GPUs and cuda:SLURM_LOCALID is right
        "srun-gpus-per-task-bind-none",
        [
            "srun",
            "-N",
            "2",
            "--ntasks-per-node=4",
            "--gpus-per-task=1",
            "--gpu-bind=none",
            "python",
            "train_slurm.py",
        ],
        world_size=8,
    ),
    # --- horovodrun ------------------------------------------------------------------------------
    Case(
        "horovodrun-two-hosts-healthy",
        ["horovodrun", "-np", "16", "-H", "node1:8,node2:8", "python", "train_hvd.py"],
        world_size=16,
    ),
    Case(
        "horovodrun-global-rank",
        ["horovodrun", "-np", "16", "-H", "node1:8,node2:8", "python", "train_hvd_rank.py"],
        code="RM401",
        category="global_rank_as_device",
        ranks=list(range(8, 16)),
        predicted="invalid device ordinal",
    ),
    Case(
        "horovodrun-localhost-oversubscribed",
        ["horovodrun", "-np", "8", "--gloo", "--start-timeout", "60", "python", "train_hvd.py"],
        machines=("workstation-4gpu",),
        code="RM102",
        category="oversubscribed",
        ranks=[4, 5, 6, 7],
        predicted="invalid device ordinal",
    ),
    Case(
        "srun-gres-healthy",
        ["srun", "-N", "2", "--ntasks-per-node", "4", "--gres=gpu:4", "python", "train_slurm.py"],
        world_size=8,
    ),
    Case(
        "srun-nested-torchrun",
        [
            "srun",
            "--ntasks-per-node=8",
            "--gres=gpu:8",
            "torchrun",
            "--nproc_per_node",
            "8",
            "train_local.py",
        ],
        code="RM904",
        category="launcher_config",
        predicted="Duplicate GPU detected : rank 0 and rank 8 both on CUDA device 18000",
    ),
    Case(
        "srun-one-task-torchrun-healthy",
        [
            "srun",
            "-N",
            "2",
            "--ntasks-per-node=1",
            "--gres=gpu:8",
            "torchrun",
            "--nnodes",
            "2",
            "--nproc_per_node",
            "8",
            "train_local.py",
        ],
        world_size=16,
    ),
    Case(
        "srun-local-rank-unset",
        ["srun", "--ntasks-per-node=4", "--gres=gpu:4", "python", "train_local.py"],
        code="RM903",
        category="launcher_config",
        ranks=[0, 1, 2, 3],
        predicted="KeyError: 'LOCAL_RANK'",
    ),
    Case(
        "srun-gpu-bind-same-gpu",
        [
            "srun",
            "--ntasks-per-node=4",
            "--gres=gpu:4",
            "--gpu-bind=map_gpu:0",
            "python",
            "train_nodevice.py",
        ],
        code="RM503",
        category="per_process_visible_devices",
        ranks=[0, 1, 2, 3],
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 3 and rank 0 both on CUDA device 18000",
    ),
    Case(
        "shell-loop-same-gpu",
        [],
        shell="loop_same_gpu.sh",
        code="RM902",
        category="launcher_config",
        warning="RM503",
    ),
    Case(
        "sbatch-command-overrides",
        ["sbatch", "--ntasks-per-node=4", "--gpus-per-task=2", "job.sbatch"],
        world_size=8,
        code="RM501",
        category="per_process_visible_devices",
        ranks=[2, 3, 6, 7],
    ),
    Case(
        "sbatch-gpus-per-task",
        [],
        shell="job.sbatch",
        code="RM501",
        category="per_process_visible_devices",
        ranks=[1, 2, 3, 5, 6, 7],
    ),
    # --- mpirun / mpiexec ----------------------------------------------------------------------
    Case(
        "mpirun-local-rank-default",
        ["mpirun", "-np", "8", "python", "train_ompi.py"],
        code="RM903",
        category="launcher_config",
        ranks=list(range(8)),
        devices=[H100_GPU0],
        predicted="Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 18000",
    ),
    Case(
        "mpirun-ompi-healthy",
        ["mpirun", "-np", "16", "-H", "node-a:8,node-b:8", "python", "train_ompi_ok.py"],
        world_size=16,
    ),
    Case(
        "mpiexec-hydra-wrong-flavour",
        ["mpiexec", "-n", "8", "-ppn", "8", "python", "train_ompi_ok.py"],
        code="RM903",
        category="launcher_config",
        ranks=list(range(8)),
        predicted="KeyError: 'OMPI_COMM_WORLD_LOCAL_RANK'",
    ),
    Case(
        # Gloo gives HOROVOD_* only: a script reading Open MPI's variable stops
        "horovodrun-gloo-reads-mpi-variable",
        ["horovodrun", "--gloo", "-np", "8", "python", "train_ompi_ok.py"],
        code="RM903",
        category="launcher_config",
        ranks=list(range(8)),
        predicted="KeyError: 'OMPI_COMM_WORLD_LOCAL_RANK'",
    ),
    Case(
        # no --gloo/--mpi: the controller depends on the build, so no KeyError is predicted
        "horovodrun-controller-unknown",
        ["horovodrun", "-np", "8", "python", "train_ompi_ok.py"],
        world_size=8,
    ),
    # --- shell loops ---------------------------------------------------------------------------
    Case(
        "shell-loop-independent",
        [],
        shell="loop.sh",
        code="RM902",
        category="launcher_config",
        ranks=list(range(8)),
    ),
    Case(
        "shell-loop-same-port",
        ["bash", "loop_same_port.sh"],
        code="RM902",
        category="launcher_config",
        predicted="port: 29500, useIpv6: false, code: -98, name: EADDRINUSE",
    ),
]


def run_case(case: Case) -> Report:
    machines = [h for m in case.machines for h in load_machine(m)]
    return check_launch(
        case.argv,
        machines=machines,
        env=case.env,
        nodes=case.nodes,
        shell_file=DATA / case.shell if case.shell else None,
        cwd=DATA,
    )


def test_table_is_big_enough() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)
    launchers = {run_case(c).sections["launch"]["launcher"] for c in CASES}
    assert {
        "torchrun",
        "torch.distributed.launch",
        "accelerate",
        "deepspeed",
        "srun",
        "mpirun",
        "horovodrun",
        "shell",
    } <= launchers
    assert sum(1 for c in CASES if c.code is None) >= 10


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_scenario(case: Case) -> None:
    report = run_case(case)
    doc = report.to_dict()
    findings = doc["findings"]
    errors = [f for f in findings if f["severity"] == "error"]
    if case.code is None:
        assert errors == [], [f["title"] for f in errors]
        assert doc["verdict"] in ("ok", "warning")
    else:
        assert findings, "expected findings"
        first = findings[0]
        assert first["code"] == case.code, [(f["code"], f["title"]) for f in findings]
        if case.category:
            assert first["category"] == case.category
        if case.ranks is not None:
            assert first["ranks"] == case.ranks
        if case.devices is not None:
            assert first["devices"] == case.devices
        assert first["fix"], "every finding carries a concrete fix"
        assert doc["verdict"] == "error"
    if case.predicted:
        assert any(case.predicted in line for line in doc["predicted_errors"]), doc[
            "predicted_errors"
        ]
    if case.world_size is not None:
        assert doc["launch"]["world_size"] == case.world_size
    if case.warning:
        assert case.warning in {f["code"] for f in findings}
