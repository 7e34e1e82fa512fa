"""A launch of several processes whose program reports a world of one process: separate jobs
of one process each (reference/launchers.md §6). Shapes written here."""

from __future__ import annotations

import io
from pathlib import Path

from rankmap.adapters.local import explain_files
from rankmap.findings import Finding

LOG = ">> MPI run (myId=0, numprocs=1) on processor node01\n-- initialising the MPI world\n"


def _explain(text: str, launch: str | None) -> list[Finding]:
    report = explain_files([Path("-")], stdin=io.StringIO(text), launch=launch)
    return report.ordered_findings()


def test_mpirun_of_four_that_reports_a_world_of_one_is_a_launcher_cause() -> None:
    first = _explain(LOG, "mpirun -n 4 ./simulate input.in")[0]
    assert first.category == "launcher_config"
    assert "world of one" in first.detail


def test_a_single_process_that_reports_a_world_of_one_is_no_alarm() -> None:
    for launch in (None, "python simulate.py"):
        assert all(f.severity.value == "info" for f in _explain(LOG, launch))


def test_a_world_of_the_launched_size_is_no_alarm() -> None:
    log = LOG.replace("numprocs=1", "numprocs=4")
    assert all(f.severity.value == "info" for f in _explain(log, "mpirun -n 4 ./simulate in"))


def test_processes_that_do_not_fit_the_model_parallelism_are_a_launcher_cause() -> None:
    for line in (
        "RuntimeError: [TRT][ERROR] Assertion failed: mpiSize == tp * pp (worldConfig.cpp:90)",
        "AssertionError: world size (6) is not divisible by tensor model parallel size (4) times "
        "pipeline model parallel size (1)",
    ):
        first = _explain(line + "\n", "mpirun -n 6 python run.py")[0]
        assert first.category == "launcher_config", line


def test_a_device_index_out_of_range_is_an_invalid_device() -> None:
    line = "RuntimeError: The device index is out of range. It must be in [0, 6), but got 11.\n"
    first = _explain(line, None)[0]
    assert first.category != "other" and "invalid-device-any" in first.detail


def test_a_working_single_process_run_or_a_parallel_group_of_one_is_no_world_of_one() -> None:
    for text in (
        "It works with world_size=1. With torchrun it takes longer per step than expected.\n",
        "[INFO] expert parallel world size: 1, sequence parallel world size: 1. Training is healthy.\n",
    ):
        assert all(
            f.severity.value == "info" for f in _explain(text, "torchrun --nproc_per_node 4 t.py")
        )


def test_a_world_size_that_fits_the_parallelism_is_no_alarm() -> None:
    text = "world size 8 is divisible by tensor parallel size 2, training proceeds normally\n"
    assert all(
        f.severity.value == "info" for f in _explain(text, "torchrun --nproc_per_node 8 t.py")
    )
