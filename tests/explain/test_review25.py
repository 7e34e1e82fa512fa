"""Review 25 (a helper read the session's diff): shapes where the new explain readers went
wrong, restated here."""

from __future__ import annotations

from paste_findings import findings_of

_WHERE = "I0907 12:00:01.101000 311 torch/distributed/elastic/agent/server/api.py:525]"


def _agent(host: str, restart: int, ranks: str) -> str:
    return (
        f"{host}: {_WHERE}   restart_count={restart}\n{host}: {_WHERE}   global_ranks=[{ranks}]\n"
    )


def test_an_agent_block_of_a_later_round_is_a_restart_not_a_claim() -> None:
    text = _agent("node-a", 0, "0, 1") + _agent("node-a", 1, "0, 1")
    assert "RM905" not in [f.code for f in findings_of(text)]
    twice = _agent("node-a", 0, "0, 1") + _agent("node-b", 0, "0, 1")
    assert "RM905" in [f.code for f in findings_of(twice)]


def test_a_claim_after_a_restart_is_still_seen() -> None:
    lines = (
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4\n"
        "RuntimeError: NCCL communicator was aborted\n"
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4\n"
        "initializing ddp: GLOBAL_RANK: 0, MEMBER: 1/4\n"
    )
    assert "RM905" in [f.code for f in findings_of(lines)]


def test_a_barrier_of_torch_2_counts_its_workers_too() -> None:
    text = (
        "torch.distributed.DistStoreError: Timed out initializing process group in store based "
        "barrier on rank 0, for key: store_based_barrier_key:1 (world_size=4, "
        "num_workers_joined=8, timeout=0:30:00 error=...)\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.severity.value) == ("RM905", "error")


def test_one_command_pasted_twice_is_one_node() -> None:
    cmd = "torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 --master_addr 10.0.0.1 train.py"
    text = f"```\n{cmd}\n```\nthen I ran it:\n$ {cmd}\nsocket timed out on the second node\n"
    assert findings_of(text)[0].category != "host_identity"


def test_two_experiments_with_one_and_two_nodes_are_no_node_count_mismatch() -> None:
    text = (
        "works on one node:\n$ torchrun --nnodes 1 --nproc_per_node 8 train.py\n"
        "fails on two:\n$ torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 train.py\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category != "launcher_config"


def test_the_same_command_on_every_node_but_its_node_rank_is_no_duplicated_rank() -> None:
    text = (
        "I run the same command on both nodes, only the node rank differs:\n"
        "torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 --master_addr 10.0.0.1 train.py\n"
        "torchrun --nnodes 2 --node_rank 1 --nproc_per_node 8 --master_addr 10.0.0.1 train.py\n"
        "it hangs at init\n"
    )
    assert findings_of(text)[0].category != "host_identity"


def test_code_the_sentence_introduces_as_what_runs_is_still_the_failing_code() -> None:
    text = (
        "# invalid device ordinal on node 2\n"
        "We can reproduce it with `torch.cuda.set_device(dist.get_rank())` on 2 nodes x 8 GPUs.\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "global_rank_as_device"


def test_a_gdb_stack_of_a_hung_process_is_no_crash_of_nccl() -> None:
    text = (
        "the job hangs; gdb shows:\n"
        "#3  0x00007f1e in ncclProxyService () from /usr/lib/libnccl.so.2\n"
        "#4  0x00007f1f in start_thread () from /lib/libpthread.so.0\n"
    )
    assert "nccl-crash-frame" not in findings_of(text)[0].detail


def test_ddp_named_next_to_dataparallel_keeps_the_gpu_0_signature() -> None:
    rows = "".join(
        f"|    {g}   N/A  N/A     {5000 + p}      C   python        {500 if g == 0 else 9000}MiB |\n"
        for p in range(1, 4)
        for g in (0, p)
    )
    text = (
        "We moved from DataParallel to DDP (torchrun --nproc_per_node 4); now GPU 0 holds extra "
        "memory\n```\n" + rows + "```\n"
    )
    assert findings_of(text)[0].category == "no_set_device"


def test_the_tensor_parallel_size_is_set_against_its_own_command_s_visible_list() -> None:
    other = (
        "CUDA_VISIBLE_DEVICES=3 python bench.py\n"
        "vllm serve my-model --tensor-parallel-size 2\n"
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in "
        "the placement group.\n"
    )
    assert findings_of(other)[0].category != "visible_devices_mismatch"


def test_set_device_missing_told_as_what_was_fixed_is_no_evidence() -> None:
    text = (
        "Before, without set_device every rank used GPU 0, so I added it. Now: NCCL WARN "
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n"
    )
    assert "set-device-missing" not in findings_of(text)[0].detail
