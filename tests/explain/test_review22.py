"""Review 22 (a black-box review of log + flags, 55 cases written by a helper): the shapes it
found, restated here."""

from __future__ import annotations

from pathlib import Path

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import explain_files
from rankmap.check.engine import check_launch
from rankmap.inventory import load_machine

ORDINAL = "RuntimeError: CUDA error: invalid device ordinal\n"
DDP = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _explain(tmp_path: Path, log: str, launch: str, machine: str) -> list[tuple[str, str, str]]:
    p = tmp_path / "job.log"
    p.write_text(log)
    report = explain_files([p], launch=launch, machines=load_machine(machine))
    return [(f.code, f.category, f.severity.value) for f in report.ordered_findings()]


def test_more_processes_than_mig_instances_a_process_sees_is_mig_in_check(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DDP)
    report = check_launch(
        ["torchrun", "--nproc_per_node=7", "train.py"],
        machines=load_machine("a100-mig"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    first = report.ordered_findings()[0]
    assert (first.code, first.category, first.severity.value) == ("RM602", "mig", "error")


def test_an_ordinal_failure_on_a_mig_machine_is_mig(tmp_path: Path) -> None:
    found = _explain(tmp_path, ORDINAL, "torchrun --nproc_per_node=7 train.py", "a100-mig")
    assert found[0][1:] == ("mig", "error")


def test_a_shared_gpu_on_a_mig_machine_is_mig(tmp_path: Path) -> None:
    log = (
        "h:1:1 [0] NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 7000\n"
    )
    found = _explain(tmp_path, log, "torchrun --nproc_per_node=2 train.py", "a100-mig")
    assert found[0][1] == "mig"


def test_an_ordinal_failure_of_a_launch_that_fits_the_gpus_is_not_oversubscription(
    tmp_path: Path,
) -> None:
    found = _explain(tmp_path, ORDINAL, "torchrun --nproc_per_node=4 t.py", "workstation-4gpu")
    assert found[0][1] != "oversubscribed"
    # one node: the global rank is the local one, so it is no alternative
    assert "global_rank_as_device" not in [c for _, c, _ in found]
    # too many for the GPUs stays oversubscription
    found = _explain(tmp_path, ORDINAL, "torchrun --nproc_per_node=8 t.py", "workstation-4gpu")
    assert found[0][1] == "oversubscribed"


def _agent_block(host: str, ranks: str) -> str:
    where = f"{host}: I0907 12:00:01.101000 311 torch/distributed/elastic/agent/server/api.py:525]"
    return (
        f"{where} [default] Starting worker group\n"
        f"{where}   global_ranks=[{ranks}]\n"
        f"{where}   group_rank=0\n"
    )


def test_two_torchrun_agents_giving_the_same_global_ranks_is_a_duplicated_node_rank(
    tmp_path: Path,
) -> None:
    log = _agent_block("node-a", "0, 1, 2, 3") + _agent_block("node-b", "0, 1, 2, 3")
    launch = "torchrun --nnodes=2 --node_rank=0 --nproc_per_node=4 --master_addr=node-a train.py"
    found = _explain(tmp_path, log, launch, "workstation-4gpu")
    assert found[0][:2] == ("RM804", "host_identity")
    # without a node rank written into the launch: the general claim
    found = _explain(
        tmp_path, log, "torchrun --nnodes=2 --nproc_per_node=4 train.py", "workstation-4gpu"
    )
    assert found[0][:2] == ("RM905", "launcher_config")


def test_agents_of_two_nodes_with_their_own_ranks_and_a_restart_are_no_claim(
    tmp_path: Path,
) -> None:
    log = _agent_block("node-a", "0, 1") + _agent_block("node-b", "2, 3")
    restart = (
        _agent_block("node-a", "0, 1")
        + "node-a: RuntimeError: NCCL communicator was aborted\n"
        + _agent_block("node-a", "0, 1")
    )
    for text in (log, restart):
        found = _explain(tmp_path, text, "torchrun --nnodes=2 --nproc_per_node=2 t.py", "dgx-a100")
        assert "RM905" not in [c for c, _, _ in found] and "RM804" not in [c for c, _, _ in found]


def test_each_process_printing_its_own_one_gpu_list_is_per_process_visibility(
    tmp_path: Path,
) -> None:
    log = "".join(f"rank {r} on hpc-a: CUDA_VISIBLE_DEVICES={r}\n" for r in range(4)) + ORDINAL
    found = _explain(
        tmp_path, log, "mpirun -np 4 ./bind_gpu.sh python train.py", "workstation-4gpu"
    )
    assert found[0][:2] == ("RM501", "per_process_visible_devices")


def test_wrong_results_of_nccl_tests_next_to_a_clean_rank_map_are_named(tmp_path: Path) -> None:
    init = "".join(
        f"h:1:1 [{r}] NCCL INFO comm 0x{r} rank {r} nranks 2 cudaDev {r} busId {r + 1}000 - Init COMPLETE\n"
        for r in range(2)
    )
    log = init + "# Out of bounds values : 68312456 FAILED\n"
    found = _explain(tmp_path, log, "mpirun -np 2 ./build/all_reduce_perf -g 1", "workstation-4gpu")
    assert found[0][1:] == ("other", "warning")
    assert found[0][0] != "RM042"


def test_an_iommu_page_fault_of_the_kernel_is_an_iommu_problem(tmp_path: Path) -> None:
    log = (
        "[ 8123.441301] nvidia 0000:52:00.0: AMD-Vi: Event logged [IO_PAGE_FAULT domain=0x0021 "
        "address=0x3fc0b000 flags=0x0020]\n"
        "[rank0]:[E907 12:30:02 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
        "operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800093 milliseconds "
        "before timing out.\n"
    )
    p = tmp_path / "job.log"
    p.write_text(log)
    report = explain_files(
        [p], launch="torchrun --nproc_per_node=2 t.py", machines=load_machine("workstation-4gpu")
    )
    first = report.ordered_findings()[0]
    assert (first.category, first.severity.value) == ("other", "warning")
    assert "[iommu]" in first.detail
