"""Review 27 (a black-box review of terse reports, 70 written by a helper): the shapes it
found, restated here."""

from __future__ import annotations

import pytest
from paste_findings import findings_of


@pytest.mark.parametrize(
    "text",
    [
        "torchrun --nproc_per_node 4 on a machine with 2 GPUs, ranks 2 and 3 crash\n",
        "nproc-per-node=8 but only 4 gpus\n",
        "8 processes, 4 GPUs\n",
    ],
)
def test_process_and_gpu_counts_told_in_words_are_compared(text: str) -> None:
    assert findings_of(text)[0].category == "oversubscribed"


def test_counts_that_fit_are_no_oversubscription() -> None:
    assert findings_of("4 processes, 4 GPUs, it hangs at the first allreduce\n")[0].category != (
        "oversubscribed"
    )


@pytest.mark.parametrize(
    "text",
    [
        "ran torchrun --nnodes=2 --node_rank=0 on both machines, it hangs\n",
        "both nodes started with --node_rank 0, hangs at rendezvous\n",
        "both have hostname ubuntu. Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n",
        "torchrun --nnodes 2 --nproc_per_node 1\n"
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000\n",
    ],
)
def test_machines_taken_for_one_in_terse_words(text: str) -> None:
    assert findings_of(text)[0].category == "host_identity"


def test_a_node_never_started_is_the_launch() -> None:
    for text in (
        "I forgot to start the second node, torchrun --nnodes 2 waits forever\n",
        "torchrun --nnodes=2 --nproc_per_node=8 train.py\nstarted only on node A, it waits forever\n",
    ):
        assert findings_of(text)[0].category == "launcher_config", text


def test_a_negation_typed_among_log_lines_is_read() -> None:
    first = findings_of("no MIG here. NCCL error: unhandled cuda error\n")[0]
    assert first.category != "mig"


def test_only_gpu_0_busy_is_the_pile_up() -> None:
    assert findings_of("only GPU 0 is busy, others 0% util\n")[0].category == "no_set_device"


def test_torch_versions_of_two_nodes_told_in_words_conflict() -> None:
    text = "node1 has torch 2.0.1, node2 has torch 2.1.2, DDP fails on broadcast\n"
    assert findings_of(text)[0].category == "version_mismatch"


def test_a_store_that_timed_out_waiting_for_clients_names_the_launch_not_a_port() -> None:
    # review 29: "choose a free --master-port" for a node that was never started
    text = (
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
        "1/2 clients joined.\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM906", "launcher_config")
    assert "2 processes and 1 joined" in first.title and "master-port" not in first.fix
    port = (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address. port: 29500, useIpv6: 0, code: -98, name: EADDRINUSE, message: address "
        "already in use\n"
    )
    assert "--master-port" in findings_of(port)[0].fix


def test_a_total_process_count_of_several_hosts_or_nccl_tests_is_no_per_node_count() -> None:
    # mpirun's -np counts every host's processes; an nccl-tests process drives -g GPUs
    for text in (
        "mpirun -np 16 -H a:8,b:8 python train.py\neach node has 8 GPUs, training runs fine\n",
        "mpirun -np 2 ./build/all_reduce_perf -b 8 -e 1G -g 4\n4 GPUs per node, results look ok\n",
    ):
        assert findings_of(text)[0].category != "oversubscribed", text


def _init(host: str, rank: int, comm: str) -> str:
    bus = f"{(rank % 8) * 8 + 7:x}000"
    return (
        f"{host}:1500:1500 [{rank % 8}] NCCL INFO comm 0x5{rank} rank {rank} nranks 16 cudaDev "
        f"{rank % 8} nvmlDev {rank % 8} busId {bus} commId {comm} - Init COMPLETE\n"
    )


def test_one_rank_initialised_on_two_hosts_is_a_rank_claimed_twice() -> None:
    # review 29: the second host's ranks vanished from the map
    text = "".join(
        _init(h, r, "0x7c1e4a0b9d2f3e61") for h in ("dgx-01", "dgx-02") for r in range(8)
    )
    first = findings_of(text)[0]
    assert first.code == "RM905" and set(first.hosts) == {"dgx-01", "dgx-02"}
    # without a commId (NCCL < 2.16) two hosts' groups of one size are two communicators
    old = text.replace(" commId 0x7c1e4a0b9d2f3e61", "")
    assert "RM905" not in [f.code for f in findings_of(old)]
    healthy = "".join(_init("dgx-01" if r < 8 else "dgx-02", r, "0x1") for r in range(16))
    assert "RM905" not in [f.code for f in findings_of(healthy)]


def test_one_host_name_bootstrapping_from_two_addresses_is_two_machines() -> None:
    text = (
        "trainer:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>\n"
        "trainer:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n"
        "trainer:100:100 [0] NCCL WARN Cuda failure 'invalid argument'\n"
    )
    found = findings_of(text)
    assert ("RM801", "host_identity", "warning") in [
        (f.code, f.category, f.severity.value) for f in found
    ]
    one = text.replace("10.0.0.2", "10.0.0.1")
    assert "RM801" not in [f.code for f in findings_of(one)]
