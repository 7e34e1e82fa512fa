"""Review 8: an independent helper's own inputs against this session's changes. Each defect it
found has a shape here, written for the test (not copied from any thread)."""

from __future__ import annotations

from pathlib import Path

from paste_findings import alarms_of, findings_of

from rankmap.adapters.local import explain_files
from rankmap.explain.catalogue import SIGNALS

ALL_ON_GPU0 = {s.id: s for s in SIGNALS}["all-on-gpu0"].pattern


def test_a_framework_named_in_the_title_is_context_not_a_cause() -> None:
    # Ray in the title and "one GPU per worker" next to a store timeout the reporter solved in the
    # network: the per-process lean is a possible cause, not an alarm
    text = (
        "# Ray Train TorchTrainer hangs at init_process_group across nodes\n\n"
        "Two nodes with four GPUs each; Ray gives one GPU per worker.\n\n"
        "```\n(RayTrainWorker pid=77, ip=10.1.0.2) [E socket.cpp:957] [c10d] The client socket "
        "has timed out after 1800s while trying to connect to (10.1.0.2, 40000).\n"
        "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
        "4/8 clients joined.\n```\n\n"
        "Solved: a network ACL between the two subnets dropped the store's port.\n"
    )
    assert not alarms_of(text)


def test_a_range_of_devices_is_not_everything_on_gpu0() -> None:
    for said in ("each rank sees cuda:0..3", "every rank uses GPU 0 to 3", "each rank on cuda:0…3"):
        assert not ALL_ON_GPU0.search(said), said
    assert ALL_ON_GPU0.search("all processes use GPU 0")


def test_a_shared_memory_crash_in_docker_is_no_container_alarm() -> None:
    text = (
        "# DataLoader bus error inside docker with four GPUs\n\n"
        "```\ndocker run --gpus all -v /d:/d img torchrun --nproc_per_node=4 train.py\n```\n\n"
        "```\nRuntimeError: DataLoader worker (pid 9) is killed by signal: Bus error. It is "
        "possible that dataloader's workers are out of shared memory.\n```\n\n"
        "/dev/shm is 64M in the container; each rank sees cuda:0..3 as it should.\n"
    )
    assert not alarms_of(text)


def test_hip_visible_devices_narrows_like_cuda_visible_devices() -> None:
    text = (
        "```\nexport HIP_VISIBLE_DEVICES=0,1\ntorchrun --nproc_per_node=4 train.py\n```\n\n"
        "```\n[rank2]: RuntimeError: HIP error: invalid device ordinal\n"
        "[rank3]: RuntimeError: HIP error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert first.category == "visible_devices_mismatch"
    assert "HIP_VISIBLE_DEVICES exposes 2 GPU(s)" in first.detail


def _init(host: str, pid: int, rank: int, nranks: int) -> str:
    return (
        f"{host}:{pid}:{pid + 80} [0] NCCL INFO comm 0x7f0 rank {rank} nranks {nranks} cudaDev 0 "
        "nvmlDev 0 busId 18000 commId 0x9a1d - Init START\n"
    )


def _dup(host: str, pid: int, a: int, b: int) -> str:
    return (
        f"{host}:{pid}:{pid + 80} [0] init.cc:801 NCCL WARN Duplicate GPU detected : rank {a} and "
        f"rank {b} both on CUDA device 18000\n"
    )


def test_a_duplicate_that_skips_ranks_is_not_every_rank_on_cuda0() -> None:
    # NCCL stops at the lowest conflicting peer: rank 0 naming rank 8 says ranks 1-7 use other
    # GPUs (two hosts of 8 ranks taken for one, or 8 GPUs for 16 ranks), not a missing set_device
    log = _init("node", 4410, 0, 16) + _init("node", 3102, 8, 16) + _dup("node", 4410, 0, 8)
    fs = findings_of(log)
    assert fs[0].category != "no_set_device"
    assert any("wraps every 8 ranks" in f.detail for f in fs)
    assert any(f.category == "host_identity" for f in fs[:4])


def test_a_duplicate_with_the_next_rank_stays_a_missing_set_device() -> None:
    log = _init("node", 10, 0, 4) + _init("node", 11, 1, 4) + _dup("node", 10, 0, 1)
    assert findings_of(log)[0].category == "no_set_device"


def test_the_cloned_hostname_report_leads_to_host_identity() -> None:
    text = (
        "# Two nodes both report localhost.localdomain; ranks 0 and 8 on one device\n\n"
        "Both bare-metal nodes were cloned from one image and have hostname "
        "`localhost.localdomain`. torchrun on each, nnodes=2, 8 processes per node.\n\n```\n"
        + _init("localhost", 4410, 0, 16)
        + _init("localhost", 3102, 8, 16)
        + _dup("localhost", 4410, 0, 8)
        + "```\n"
    )
    assert findings_of(text)[0].category == "host_identity"


DUP_LOG = (
    "trainer:31:77 [0] init.cc:799 NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on "
    "CUDA device 1b000\n"
)


def test_containers_on_two_machines_sharing_a_name_lead_to_host_identity() -> None:
    text = (
        "# Duplicate GPU across two machines running docker\n\n"
        "Two physical servers each run one container with --network host; torchrun on each.\n\n"
        "```\n" + DUP_LOG + "```\n"
    )
    assert findings_of(text)[0].category == "host_identity"


def test_one_process_per_machine_and_a_shared_gpu_is_host_identity(tmp_path: Path) -> None:
    log = tmp_path / "job.log"
    log.write_text(DUP_LOG)
    report = explain_files([log], launch="torchrun --nnodes 2 --nproc_per_node 1 train.py")
    first = report.ordered_findings()[0]
    assert first.category == "host_identity"
    assert "ranks 0 and 1 start on different nodes" in first.detail


def test_one_machine_with_a_shared_gpu_gets_no_host_identity_lead() -> None:
    text = "# Duplicate GPU with torchrun\n\n```\n" + DUP_LOG + "```\n"
    assert findings_of(text)[0].category != "host_identity"


def test_a_list_a_ray_worker_prints_is_rays_not_a_user_narrowing() -> None:
    text = (
        "# Ray actors with num_gpus=1 fail in set_device(rank)\n\n"
        "```\n(Worker pid=812, ip=10.0.0.5) CUDA_VISIBLE_DEVICES=2\n"
        "ray.exceptions.RayActorError: The actor died because of an error raised in its creation "
        "task\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    assert findings_of(text)[0].category == "per_process_visible_devices"


def test_a_list_printed_outside_ray_is_still_a_narrowing() -> None:
    log = "CUDA_VISIBLE_DEVICES=6,7\nRuntimeError: CUDA error: invalid device ordinal\n"
    assert findings_of(log)[0].category == "visible_devices_mismatch"
