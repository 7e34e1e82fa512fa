"""Review 9: log + flags inputs where a weak or assumed fact was promoted to an alarm."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rankmap.adapters.local import explain_files, load_machine
from rankmap.findings import Finding, Severity

HEALTHY = "NCCL INFO Init COMPLETE\nstep 100 loss 2.31\nstep 200 loss 2.05\n"
NETWORK = (
    "NCCL WARN socketStartConnect: Connect to 10.0.0.2<12345> failed : Software caused "
    "connection abort\n"
    "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1269, unhandled system error\n"
)


def _findings(log: str, **kw: Any) -> list[Finding]:
    return explain_files([Path("-")], stdin=io.StringIO(log), **kw).ordered_findings()


def test_naming_nccl_tests_is_no_failure() -> None:
    first = _findings(
        HEALTHY,
        launch="mpirun -np 8 ./build/all_reduce_perf -b 8 -e 128M -g 1",
        machines=load_machine("dgx-a100"),
    )[0]
    assert first.severity is Severity.INFO


def test_an_unread_script_under_srun_is_not_predicted_to_fail() -> None:
    # srun sets no LOCAL_RANK, but without the script nobody knows whether it reads it: the
    # network failure the log shows stays the first finding
    fs = _findings(
        NETWORK,
        launch="srun -N 2 --ntasks-per-node 4 python train.py",
        machines=load_machine("dgx-a100"),
    )
    assert fs[0].code == "RM041"
    assert not any("KeyError" in f.title or "KeyError" in f.detail for f in fs)


GUESS = (
    "[rank1]:[W1109 10:00:00.123 ProcessGroupNCCL.cpp:4561] [PG ID 0 PG GUID 0 Rank 1]  using GPU "
    "1 to perform barrier as devices used by this process are currently unknown. This can "
    "potentially cause a hang if this rank to GPU mapping is incorrect. Specify device_ids in "
    "barrier() to force use of a particular device, or call init_process_group() with a "
    "device_id.\n"
)
DUPLICATE = (
    "trainer:31:77 [1] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
    "CUDA device 1b000\n"
)


def test_pytorchs_device_guess_alone_is_a_note() -> None:
    # PyTorch prints it in most jobs without device_id; its "can cause a hang" is no hang
    fs = _findings(GUESS)
    assert fs[0].code == "RM402" and fs[0].severity is Severity.INFO
    assert all(f.severity is Severity.INFO for f in fs)


def test_pytorchs_device_guess_next_to_a_shared_gpu_stays_a_warning() -> None:
    fs = _findings(GUESS + DUPLICATE)
    guess = next(f for f in fs if f.code == "RM402")
    assert guess.severity is Severity.WARNING


def test_a_predicted_launch_failure_yields_to_a_job_that_ran_into_an_oom() -> None:
    # the MIG uuid is not on the profile, so the simulation predicts "no GPU"; the log shows the
    # job had a GPU and ran out of its memory: the OOM leads
    oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 4.75 GiB\n"
    )
    fs = _findings(
        oom,
        launch="python train.py",
        env={"CUDA_VISIBLE_DEVICES": "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f"},
        machines=load_machine("a100-mig"),
    )
    assert fs[0].code == "RM040"
    assert not [f for f in fs if f.category == "mig" and f.severity is not Severity.INFO]


P2P = (
    "node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    "node1:1234:1300 [0] NCCL INFO comm 0x55 rank 0 nRanks 8 nNodes 2 localRanks 4 localRank 0 "
    "MNNVL 0\n"
    "node1:1234:1300 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.2<44321> with "
    "status=12 opcode=0 len=0 vendor err 129 (Recv)\n"
)


def test_p2p_between_local_ranks_of_a_two_node_job_is_no_host_identity() -> None:
    fs = _findings(P2P, launch="torchrun --nnodes 2 --nproc_per_node 4 train.py")
    assert not [f for f in fs if f.category == "host_identity" and f.severity is not Severity.INFO]


def test_p2p_with_one_rank_per_node_still_points_at_host_identity() -> None:
    one_each = "".join(line for line in P2P.splitlines(True) if "localRanks" not in line)
    fs = _findings(one_each, launch="torchrun --nnodes 2 --nproc_per_node 1 train.py")
    assert fs[0].category == "host_identity"


CLONED = (
    "ubuntu:2001:2001 [0] NCCL INFO Bootstrap : Using eth0:192.168.1.10<0>\n"
    "ubuntu:3001:3001 [0] NCCL INFO Bootstrap : Using eth0:192.168.1.11<0>\n"
    "ubuntu:2001:2050 [0] NCCL INFO comm 0x5555 rank 0 nranks 4 cudaDev 0 busId 1000 - Init START\n"
    "ubuntu:2002:2051 [1] NCCL INFO comm 0x5556 rank 1 nranks 4 cudaDev 1 busId 2000 - Init START\n"
    "ubuntu:3001:3050 [0] NCCL INFO comm 0x5557 rank 2 nranks 4 cudaDev 0 busId 1000 - Init START\n"
    "ubuntu:3002:3051 [1] NCCL INFO comm 0x5558 rank 3 nranks 4 cudaDev 1 busId 2000 - Init START\n"
    "ubuntu:3001:3050 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both "
    "on CUDA device 1000\n"
)


def test_one_host_name_with_two_bootstrap_addresses_is_host_identity() -> None:
    first = _findings(CLONED)[0]
    assert first.code == "RM801"
    assert "bootstrap from 2 addresses (192.168.1.10, 192.168.1.11)" in first.detail


def test_a_pair_the_launch_puts_on_two_nodes_is_host_identity() -> None:
    same_address = CLONED.replace("192.168.1.11", "192.168.1.10")
    first = _findings(same_address, launch="torchrun --nnodes 2 --nproc_per_node 2 train.py")[0]
    assert first.code == "RM801"
    assert "ranks 2 and 0 start on different nodes (node 1 and 0)" in first.detail
    # without the launch (and one address) the wrap on one host name reads as too many processes
    assert _findings(same_address)[0].category == "oversubscribed"


def test_nccl_tests_wrong_results_are_a_failure_of_the_family() -> None:
    failed = "#  Out of bounds values : 12 FAILED\n#  Avg bus bandwidth    : 10.52\n"
    first = _findings(failed)[0]
    assert first.category == "other" and first.severity is Severity.WARNING
    healthy = failed.replace("12 FAILED", "0 OK")
    assert _findings(healthy)[0].code == "RM003"


def test_the_device_guess_of_rank_0_is_not_every_rank_on_gpu0() -> None:
    # "[PG ID 0 PG GUID 0 Rank 0]  using GPU 0": an id, not "0 ranks using GPU 0"
    ranks = "".join(
        GUESS.replace("rank1", f"rank{r}").replace("GPU 1", f"GPU {r}") for r in range(4)
    )
    dataloader = "[rank2]: Traceback (most recent call last):\n[rank2]: KeyError: 'image_path'\n"
    fs = _findings(ranks + dataloader, launch="torchrun --nproc_per_node 4 train.py")
    assert not [f for f in fs if f.category != "other" and f.severity is not Severity.INFO]
    assert "no_set_device" not in {f.category for f in fs}


def test_a_launcher_echoing_local_rank_in_its_log_is_no_setting() -> None:
    log = (
        "RuntimeError: Current loss scale already at minimum - cannot decrease scale anymore.\n"
        "[ERROR] [launch.py:321:sigkill_handler] ['/usr/bin/python', '-u', 'train.py', "
        "'--local_rank=3', '--deepspeed', 'ds.json'] exits with return code = 1\n"
    )
    fs = _findings(log, launch="deepspeed --num_gpus 4 train.py --deepspeed ds.json")
    assert fs[0].code == "RM003"  # a failure outside the family: nothing of the mapping


def test_a_slurm_time_limit_is_outside_the_family() -> None:
    log = (
        "export MASTER_ADDR=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -n 1)\n"
        "slurmstepd: error: *** JOB 81234 ON gpu-07 CANCELLED AT 2024-05-02T11:00:04 DUE TO TIME "
        "LIMIT ***\n"
    )
    assert _findings(log)[0].code == "RM003"


def test_changed_is_no_hang() -> None:
    warning = (
        "UserWarning: Grad strides do not match bucket view strides. This may indicate grad was "
        "not created according to the gradient layout contract, or that the param's strides "
        "changed since DDP was constructed.\n"
    )
    assert _findings(warning)[0].code == "RM003"


def test_c10d_retrying_another_address_is_no_store_failure() -> None:
    retry = (
        "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29400 (errno: 98 "
        "- Address already in use).\n"
    )
    assert "RM906" not in {f.code for f in _findings(retry + "End of training\n")}
    failed = "[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.\n"
    assert "RM906" in {f.code for f in _findings(failed)}


def test_several_shared_gpus_are_not_one_gpu_in_the_title() -> None:
    pairs = "".join(
        f"node:{100 + r}:{200 + r} [{r}] init.cc:871 NCCL WARN Duplicate GPU detected : rank "
        f"{r + 4} and rank {r} both on CUDA device {bus}000\n"
        for r, bus in enumerate(("1b", "1c", "3d"))
    )
    first = _findings(pairs)[0]
    assert "share 3 GPUs, several ranks on each" in first.title


def test_ranks_of_two_nccl_releases_make_one_rank_map() -> None:
    new = "node-21:91{r}:93{r} [{r}] NCCL INFO comm 0x55{r} rank {r} nranks 4 cudaDev {d} nvmlDev {d} busId {b}000 commId 0x3e1a - Init START\n"
    old = "node-22:77{r}:79{r} [{d}] NCCL INFO comm 0x56{r} rank {r} nranks 4 cudaDev {d} busId {b}000 - Init START\n"
    log = new.format(r=0, d=0, b="1e") + new.format(r=1, d=1, b="1f")
    log += old.format(r=2, d=0, b="1e") + old.format(r=3, d=1, b="1f")
    rankmap = next(f for f in _findings(log) if f.code == "RM042")
    assert rankmap.title.startswith(
        "Rank map rebuilt from the log: 4 rank(s) on 2 host(s), 1 communicator(s)"
    )


def test_peers_that_lose_a_rank_which_failed_on_its_own_name_that_rank() -> None:
    log = (
        "node18: [rank11]: Traceback (most recent call last):\n"
        "node18: [rank11]: AssertionError: router dropped tokens: 8190 != 8192\n"
        "node17: node17:40214:40520 [3] misc/socket.cc:538 NCCL WARN Net : Connection closed by "
        "remote peer node18<51884>\n"
        "node17: ncclRemoteError: A call failed possibly due to a network error or a remote "
        "process exiting prematurely.\n"
    )
    first = _findings(log)[0]
    assert first.code == "RM041" and first.severity is Severity.WARNING
    assert "rank 11" in first.title and "AssertionError: router dropped tokens" in first.detail
    # the peers' own words alone stay a connection failure
    peers_only = "".join(line + "\n" for line in log.splitlines()[2:])
    alone = _findings(peers_only)[0]
    assert alone.code == "RM041" and alone.title == "NCCL ranks could not connect to each other"
