"""Session 12: shapes of the fresh dev part of batch b17 and of reviews 21-22, restated here."""

from __future__ import annotations

from paste_findings import findings_of


def _lightning_lines(ranks: list[int], world: int) -> str:
    return "".join(f"initializing ddp: GLOBAL_RANK: {r}, MEMBER: {r + 1}/{world}\n" for r in ranks)


def test_a_global_rank_announced_twice_while_others_never_appear_is_two_processes_per_rank() -> (
    None
):
    text = (
        "# two nodes stall at DDP init\n"
        "Works on one node; on two Slurm nodes the job stops at initializing.\n"
        "```\n" + _lightning_lines([0, 0, 1, 1, 2, 2, 3, 3], 8) + "```\n"
    )
    first = findings_of(text)[0]
    # a warning: a logger that doubles every line repeats them too (review 25)
    assert (first.code, first.category, first.severity.value) == (
        "RM905",
        "launcher_config",
        "warning",
    )
    assert "GLOBAL_RANK: 0" in first.evidence[0]


def test_one_node_of_two_shows_its_own_ranks_once_each() -> None:
    # the console of one node of a 2-node job: ranks 0-3 of 8, once each, is no collision
    text = "# slow start on 2 nodes\n```\n" + _lightning_lines([0, 1, 2, 3], 8) + "```\n"
    assert not [f for f in findings_of(text) if f.code == "RM905"]


def test_ranks_announced_again_after_a_failure_are_a_restart() -> None:
    text = (
        "```\n" + _lightning_lines([0, 1], 4) + "Traceback (most recent call last):\n"
        "RuntimeError: NCCL communicator was aborted\n" + _lightning_lines([0, 1], 4) + "```\n"
    )
    assert not [f for f in findings_of(text) if f.code == "RM905"]


def test_a_store_barrier_counting_more_workers_than_the_world_is_a_rank_collision() -> None:
    text = (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, "
        "for key: store_based_barrier_key:1 (world_size=4, worker_count=8, timeout=0:30:00)\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM905", "launcher_config")


def test_a_store_barrier_short_of_workers_is_no_rank_collision() -> None:
    text = (
        "RuntimeError: Timed out initializing process group in store based barrier on rank: 0, "
        "for key: store_based_barrier_key:1 (world_size=8, worker_count=4, timeout=0:30:00)\n"
    )
    assert not [f for f in findings_of(text) if f.code == "RM905"]


def test_each_process_seeing_its_own_device_as_device_0_is_per_process_visibility() -> None:
    text = (
        "# pick device 0 when the launcher masks each worker to one GPU\n"
        "Our launcher sets CUDA_VISIBLE_DEVICES per worker, so each process sees only its own "
        "GPU as device 0, but the trainer indexes cuda:LOCAL_RANK.\n"
        "```\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    assert findings_of(text)[0].category == "per_process_visible_devices"


def test_a_worker_that_sees_its_own_device_as_device_0_is_not_all_ranks_on_gpu_0() -> None:
    text = (
        "# ranks 1-3 crash\n"
        "Every worker sees its own device as device 0 after the scheduler masks it.\n"
        "```\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    found = findings_of(text)
    assert found[0].category == "per_process_visible_devices"
    assert "no_set_device" not in [f.category for f in found]


def test_code_the_sentence_proposes_as_the_fix_is_not_the_failing_code() -> None:
    text = (
        "# parameters of every rank land on cuda:0\n"
        "The module calls `self.to('cuda')`, which puts the weights of every process on GPU 0. "
        "Instead, we can move them to the process's device with `self.to(f'cuda:{self.global_rank}')`.\n"
    )
    found = findings_of(text)
    assert found[0].category == "no_set_device"
    assert "global_rank_as_device" not in [f.category for f in found]


def test_a_launch_command_the_writer_blames_supports_the_launcher() -> None:
    text = (
        "# [BUG] multi-node run hangs before the process group exists\n"
        "Running on two nodes with our launcher hangs before init. I think it is a wrong launch "
        "command that the tool builds for the second node.\n"
    )
    assert findings_of(text)[0].category == "launcher_config"


def test_a_launch_command_denied_as_the_cause_is_no_support() -> None:
    text = (
        "# multi-node run hangs before the process group exists\n"
        "Running on two nodes hangs before init. It is not a wrong launch command, I checked it.\n"
    )
    assert findings_of(text)[0].category != "launcher_config"


def test_a_bare_python_exception_is_no_alarm() -> None:
    # review 21: a lone ValueError / shape mismatch was an "other" warning of this family
    for line in (
        "ValueError: too many values to unpack (expected 2)",
        "[rank0]: RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x512 and 256x10)",
    ):
        first = findings_of(line + "\n")[0]
        assert first.severity.value == "info", line


def test_an_nccl_error_is_still_a_warning_of_the_family() -> None:
    first = findings_of(
        "torch.distributed.DistBackendError: NCCL error in: x.cpp:1, unhandled cuda error\n"
    )[0]
    assert first.severity.value in ("warning", "error")


_NODE = "torchrun --nnodes {n} --node_rank {r} --nproc_per_node 8 --master_addr 10.0.0.1 train.py"


def test_two_node_prompts_with_one_node_rank_are_duplicated_node_ranks() -> None:
    text = f"node1$ {_NODE.format(n=2, r=0)}\nnode2$ {_NODE.format(n=2, r=0)}\nhangs at init\n"
    assert findings_of(text)[0].category == "host_identity"


def test_node_launch_lines_with_their_own_node_ranks_are_no_finding() -> None:
    text = (
        f"[me@node1 ~]$ {_NODE.format(n=2, r=0)}\n"
        f"[me@node2 ~]$ {_NODE.format(n=2, r=1)}\n"
        "hangs at init\n"
    )
    assert findings_of(text)[0].category not in ("host_identity", "launcher_config")


def test_node_launch_lines_waiting_for_different_node_counts_are_a_launcher_mismatch() -> None:
    text = (
        f"nodeA$ {_NODE.format(n=2, r=0)}\n"
        f"nodeB$ {_NODE.format(n=1, r=0)}\n"
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
        "1/2 clients joined.\n"
    )
    assert findings_of(text)[0].category == "launcher_config"


def test_one_command_with_a_fixed_node_rank_run_on_both_nodes_is_a_duplicated_node_rank() -> None:
    text = f"I run the same command on both nodes:\n{_NODE.format(n=2, r=0)}\nit hangs at init\n"
    assert findings_of(text)[0].category == "host_identity"
    # without the sentence, the per-node command of every tutorial is no finding
    assert (
        findings_of(f"{_NODE.format(n=2, r=0)}\nit hangs at init\n")[0].category != "host_identity"
    )


def test_nccl_versions_of_two_nodes_in_one_sentence_are_a_version_conflict() -> None:
    text = (
        "python train.py on 2 nodes\n"
        "NCCL version 2.18.1+cuda12.1 on node1 and 2.21.5+cuda12.4 on node2, the job hangs in "
        "the first all_reduce\n"
    )
    assert findings_of(text)[0].category == "version_mismatch"
    # a second software's version in the sentence is not a second NCCL
    assert (
        findings_of("NCCL version 2.18.1 and torch 2.1.0, the job hangs in the first all_reduce\n")[
            0
        ].category
        != "version_mismatch"
    )


def test_a_writer_who_forgot_set_device_decides_a_shared_gpu() -> None:
    text = (
        "forgot set_device in my script, torchrun --nproc_per_node 4 train.py\n"
        "NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1a000\n"
    )
    assert findings_of(text)[0].category == "no_set_device"
    # "set_device" named without saying it is missing decides nothing (ranks 2 and 0: not the
    # neighbours that show every rank on one GPU, session 16)
    text = text.replace("forgot set_device in my script", "my script has set_device")
    text = text.replace("rank 1 and rank 0", "rank 2 and rank 0")
    assert findings_of(text)[0].category != "no_set_device"


def test_a_visible_list_shorter_than_the_tensor_parallel_size_is_a_visible_devices_mismatch() -> (
    None
):
    text = (
        "CUDA_VISIBLE_DEVICES=3 vllm serve my-model --tensor-parallel-size 2\n"
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in "
        "the placement group.\n"
    )
    assert findings_of(text)[0].category == "visible_devices_mismatch"
    # a list as long as the tensor-parallel size leaves the engine's own message to decide
    assert findings_of(text.replace("=3 ", "=3,4 "))[0].category != "visible_devices_mismatch"


def test_a_backtrace_frame_inside_libnccl_is_a_crash_of_nccl() -> None:
    text = (
        "Caught signal 11 (Segmentation fault: address not mapped to object at address 0x8)\n"
        "==== backtrace ====\n"
        " 0  /usr/lib/x86_64-linux-gnu/libnccl.so.2(+0x5a1b2) [0x7f3a]\n"
        " 1  /usr/lib/x86_64-linux-gnu/libnccl.so.2(ncclTopoCompute+0x312) [0x7f3b]\n"
    )
    first = findings_of(text)[0]
    assert (first.category, first.severity.value) == ("other", "warning")
