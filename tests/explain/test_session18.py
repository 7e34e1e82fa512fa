"""Session 18: shapes written here, restating review and b25 dev findings in our own words."""

from __future__ import annotations

from paste_findings import findings_of

# --- a store bound on a machine that is not MASTER_ADDR -----------------------------------------


def _bind_failure(launch: str) -> str:
    return (
        "The second machine fails right away; the first one is waiting.\n\n"
        f"$ {launch}\n"
        "Traceback (most recent call last):\n"
        '  File "static_tcp_rendezvous.py", line 55, in next_rendezvous\n'
        "    self._store = TCPStore(\n"
        "torch.distributed.DistNetworkError: The server socket has failed to bind to "
        "10.1.2.3:29500 (errno: 99 - Cannot assign requested address).\n"
    )


def test_errno_99_as_the_only_store_line_of_a_two_node_launch_is_a_node_rank_0_twice() -> None:
    launch = (
        "torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=10.1.2.3 "
        "--master_port=29500 train.py"
    )
    first = findings_of(_bind_failure(launch))[0]
    assert (first.code, first.category, first.severity.value) == (
        "RM907",
        "launcher_config",
        "error",
    )
    assert "node rank" in first.fix


def test_errno_99_on_a_one_node_launch_names_master_addr_not_a_node_rank() -> None:
    launch = "torchrun --nnodes=1 --nproc_per_node=4 --master_addr=10.1.2.3 train.py"
    first = findings_of(_bind_failure(launch))[0]
    assert first.code == "RM906"
    assert "127.0.0.1" in first.fix


# --- accelerate's gpu_ids is a visible-devices list ---------------------------------------------


def _accelerate_paste(smi_rows: int) -> str:
    smi = "".join(
        f"{i}, NVIDIA L4, 00000000:{16 * i + 1:02X}:00.0, 1 MiB\n" for i in range(smi_rows)
    )
    return (
        "accelerate: two of the processes fail at start\n\n"
        "```yaml\ndistributed_type: MULTI_GPU\nnum_machines: 1\nnum_processes: 4\n"
        "gpu_ids: 0,1\n```\n\n"
        "$ nvidia-smi --query-gpu=index,name,pci.bus_id,memory.used --format=csv\n"
        "index, name, pci.bus_id, memory.used [MiB]\n" + smi + "\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )


def test_gpu_ids_narrower_than_the_machine_is_the_users_list_against_the_process_count() -> None:
    first = findings_of(_accelerate_paste(4))[0]
    assert first.category == "visible_devices_mismatch"
    assert "gpu_ids" in first.detail


def test_gpu_ids_as_wide_as_the_machine_is_too_many_processes() -> None:
    first = findings_of(_accelerate_paste(2))[0]
    assert first.category == "oversubscribed"


def test_a_query_gpu_csv_table_counts_the_machines_gpus() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document(_accelerate_paste(3))
    assert facts.smi_gpus == 3
    assert facts.segments["smi"] == 1
