"""Session 15: fix texts name only options of the command they change. Shapes written here."""

from __future__ import annotations

from pathlib import Path

from script_checks import check_argv, fixes_of


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
