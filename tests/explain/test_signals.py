"""Secondary signals that tell causes apart (rankmap.explain.signals), through explain_files."""

from __future__ import annotations

from pathlib import Path
from unittest.mock import patch

from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.adapters.local import explain_files
from rankmap.explain import prefix
from rankmap.explain.prefix import split_messages, strip_prefixes
from rankmap.findings import Finding


def _first(tmp_path: Path, text: str, **kw: object) -> Finding:
    path = tmp_path / "job.log"
    path.write_text(text)
    return explain_files([path], **kw).ordered_findings()[0]  # type: ignore[arg-type]


def test_duplicate_in_a_sub_group_points_at_set_device(tmp_path: Path) -> None:
    text = (
        "[rank6]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
        "[rank6]: Last error:\n"
        "[rank6]: Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1b000\n"
    )
    first = _first(tmp_path, text)
    assert first.code == "RM301"
    assert list(first.ranks) == [0, 1]
    assert "sub-group" in first.detail


def test_duplicate_reported_by_a_rank_of_the_pair_stays_undecided(tmp_path: Path) -> None:
    text = "[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000\n"
    assert _first(tmp_path, text).code == "RM103"


def test_physical_index_after_narrowing(tmp_path: Path) -> None:
    text = "VISIBLE GPUS: 6,7\nRuntimeError: CUDA error: invalid device ordinal\n"
    first = _first(tmp_path, text)
    assert (first.code, first.category) == ("RM240", "visible_devices_mismatch")


def test_renumbered_list_that_fits_is_not_a_physical_index(tmp_path: Path) -> None:
    text = "CUDA_VISIBLE_DEVICES: [0,1]\nRuntimeError: CUDA error: invalid device ordinal\n"
    assert _first(tmp_path, text).code != "RM240"


def test_framework_gives_one_local_rank_to_several_processes(tmp_path: Path) -> None:
    text = "".join(
        f"LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1]\ninitializing ddp: GLOBAL_RANK: {r}, "
        "MEMBER: {r + 1}/4\n"
        for r in range(4)
    )
    text += "RuntimeError: CUDA error: invalid device ordinal\n"
    first = _first(tmp_path, text, env={"SLURM_NNODES": "2"})
    assert (first.code, first.category) == ("RM941", "launcher_config")


def test_nccl_tests_binary_is_not_judged_as_a_pytorch_script(tmp_path: Path) -> None:
    text = "host1: Test CUDA failure common.cu:732 'invalid device ordinal'\n" * 4
    first = _first(tmp_path, text, launch="mpirun -np 16 ./build/all_reduce_perf -g 2")
    assert first.category == "oversubscribed"


def test_retyped_ordinal_message_is_recognised(tmp_path: Path) -> None:
    for text in (
        "RuntimeError: CUDA error: invalid device ordinnal\n",
        "tensorflow: Invalid device ordinal value (1). Valid range is [0, 0].\n",
    ):
        assert _first(tmp_path, text).code == "RM102"


def test_silent_worker_failure_is_quoted(tmp_path: Path) -> None:
    text = (
        "E1226 16:52:45.454000 7 api.py:869] failed (exitcode: 1) local_rank: 7 (pid: 81) of "
        "binary: /usr/local/bin/python\n"
    )
    first = _first(tmp_path, text)
    assert first.code == "RM003"
    assert first.evidence and "local_rank: 7" in first.evidence[0]


def test_prefix_only_parts_stay_with_their_message() -> None:
    line = (
        "0: [rank3]: gpu-a:100:200 [3] init.cc:824 NCCL WARN Duplicate GPU detected : rank 3 "
        "and rank 0 both on CUDA device 4f000"
    )
    parts = split_messages(line)
    assert len(parts) == 1
    pre, msg = strip_prefixes(parts[0])
    assert (pre.task, pre.rank, pre.host) == (0, 3, "gpu-a")
    assert msg.startswith("init.cc:824 NCCL WARN")


def test_cvd_listing_the_whole_allocation_is_oversubscription(tmp_path: Path) -> None:
    """Slurm sets CUDA_VISIBLE_DEVICES to the node's allocation: 8 tasks on 4 GPUs oversubscribe."""
    text = "RuntimeError: CUDA error: invalid device ordinal\n"
    launch = "srun --nodes=2 --ntasks-per-node=8 --gres=gpu:a100:4 python train.py"
    whole = _first(tmp_path, text, launch=launch, env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    assert whole.category == "oversubscribed"
    narrowed = _first(tmp_path, text, launch=launch, env={"CUDA_VISIBLE_DEVICES": "0,1"})
    assert narrowed.category == "visible_devices_mismatch"


def test_oom_on_a_shared_gpu_names_the_cause_then_the_symptom(tmp_path: Path) -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
        "capacity of 79.15 GiB of which 1.2 GiB is free. Process 11 has 38.1 GiB memory in use. "
        "Process 12 has 38.1 GiB memory in use.\n"
        "[rank1]: torch.distributed.DistNetworkError: Connection closed by remote peer\n"
    )
    path = tmp_path / "oom.log"
    path.write_text(text)
    codes = [f.code for f in explain_files([path]).ordered_findings()]
    assert codes[:2] == ["RM301", "RM011"]
    with_launch = _first(tmp_path, text, launch="torchrun --nproc_per_node 8 train.py", machines=[])
    assert with_launch.category in ("no_set_device", "oversubscribed")


def test_oom_of_a_single_process_is_not_a_mapping_error(tmp_path: Path) -> None:
    text = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.72 GiB. GPU 0 has a "
        "total capacity of 39.50 GiB of which 1.20 GiB is free. Including non-PyTorch memory, "
        "this process has 38.29 GiB memory in use.\n"
    )
    first = _first(tmp_path, text)
    assert (first.code, first.severity.value) == ("RM040", "warning")


def test_duplicate_printed_by_a_ray_worker(tmp_path: Path) -> None:
    text = (
        "(RayWorkerWrapper pid=4711, ip=10.0.0.5) node-a:4711:4800 [0] init.cc:871 NCCL WARN "
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1b000\n"
    )
    first = _first(tmp_path, text)
    assert (first.code, first.category) == ("RM503", "per_process_visible_devices")
    noset = _first(tmp_path, text, env={"RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES": "1"})
    assert noset.code == "RM301"


SMI_4 = "".join(
    f"|   {i}  NVIDIA A100-SXM4-80GB          On  |   00000000:{bus}:00.0 Off |                    0 |\n"
    for i, bus in enumerate(("07", "0F", "47", "4E"))
)


def test_pasted_command_and_nvidia_smi_table_are_context(tmp_path: Path) -> None:
    text = (
        "(env) user@box:~/repo$ torchrun --nproc_per_node=8 train.py\n"
        + SMI_4
        + "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    path = tmp_path / "paste.log"
    path.write_text(text)
    report = explain_files([path])
    first = report.ordered_findings()[0]
    assert (first.code, first.category) == ("RM102", "oversubscribed")
    assert "8 processes per node on a 4-GPU machine" in first.detail
    notes = report.sections["explain"]["context_from_log"]
    assert any("torchrun --nproc_per_node=8" in n for n in notes)
    assert any("4 GPU(s)" in n for n in notes)


def test_pasted_launch_that_fits_the_gpus_points_at_device_selection(tmp_path: Path) -> None:
    text = (
        "$ torchrun --nproc_per_node=4 train.py\n"
        + SMI_4
        + "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 7000\n"
    )
    assert _first(tmp_path, text).code == "RM301"


def test_given_launch_wins_over_the_pasted_one_and_secrets_are_redacted(tmp_path: Path) -> None:
    text = (
        "+ HF_TOKEN=hf_secret123 torchrun --nproc_per_node=8 train.py --hf-token hf_secret123\n"
        'File "/usr/local/bin/torchrun", line 8, in <module>\n'
        "WARNING:torch.distributed.run: Setting OMP_NUM_THREADS\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    path = tmp_path / "secret.log"
    path.write_text(text)
    report = explain_files([path])
    blob = str(report.to_dict())
    assert "hf_secret123" not in blob
    assert report.sections["explain"]["launch"]["nproc_per_node"] == 8
    given = explain_files([path], launch="torchrun --nproc_per_node=2 train.py")
    assert given.sections["explain"]["launch"]["nproc_per_node"] == 2
    assert "context_from_log" not in given.sections["explain"]


_PIECES = st.sampled_from(
    [
        "node-0:12:34 [3] ",
        "node-0:12:34 [3] init.cc:824 ",
        "[2025-01-02 10:11:12] ",
        "2025-01-02 10:11:12 ",
        "NCCL INFO ",
        "NCCL WARN ",
        "ncclCommInitRank comm 0x55 rank 3 nranks 8 busId 4f000 - Init START",
        "ncclInvalidUsage: bad",
        "RuntimeError: x",
        "[rank1]: ",
        "[1,2]<stderr>: ",
        "Last error:",
        "Traceback (most recent call last):",
        "  time  : 12",
        "\t",
        " ",
        "0: ",
        "x" * 60,
    ]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES | st.text(max_size=8), min_size=1, max_size=10).map("".join))
def test_the_split_gate_never_changes_the_split(text: str) -> None:
    line = text if len(text) >= 120 else text + " " + "y" * 120
    gated = split_messages(line)
    with patch.object(prefix, "_may_split", lambda _text: True):
        full = split_messages(line)
    # what a line of prefixes only comes back as differs by trailing blanks, which
    # strip_prefixes (the reader of each part) drops
    assert gated == full or [line] == gated and [p.strip() for p in full] == [line.strip()]
    assert [strip_prefixes(p) for p in gated] == [strip_prefixes(p) for p in full]
