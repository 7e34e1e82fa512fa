"""rankmap run end to end: the job's output, the run directory, preflight and diagnosis."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest


def _run(run_cli, sub_env, *argv: str):  # type: ignore[no-untyped-def]
    return run_cli(["run", *argv], env=sub_env)


def test_success_streams_output_and_exits_0(run_cli, sub_env, jobs: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "r1"
    result = _run(
        run_cli, sub_env, "--run-dir", str(run_dir), "--", sys.executable, str(jobs / "job.py"), "0"
    )
    assert result.status == 0
    assert result.stdout == "out 0\nout 1\nout 2\n"  # the job's stdout, unchanged
    assert "err 0\nerr 1\nerr 2\n" in result.stderr
    assert f"rankmap: run dir {run_dir}" in result.stderr
    summary = json.loads((run_dir / "run.json").read_text())
    assert summary["exit_code"] == 0 and summary["env_defaults"]["NCCL_DEBUG"] == "INFO"
    assert "diagnosis" not in result.stderr


def test_failure_keeps_exit_code_and_captures_nccl_files(
    run_cli, sub_env, jobs: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "r2"
    result = _run(
        run_cli,
        sub_env,
        "--run-dir",
        str(run_dir),
        "--",
        sys.executable,
        str(jobs / "job.py"),
        "3",
        "--dup",
    )
    assert result.status == 3
    assert result.stdout.startswith("out 0\n")
    nccl_files = list(run_dir.glob("nccl.*.log"))
    assert len(nccl_files) == 1 and "Duplicate GPU detected" in nccl_files[0].read_text()
    assert "Duplicate GPU detected" in (run_dir / "output.log").read_text()
    job_end = result.stderr.index("Last error:")
    assert result.stderr.index("the job exited with code 3") > job_end  # after the job's output


def test_user_env_wins_and_secrets_are_redacted(run_cli, sub_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "r3"
    code = "import os; print(os.environ['NCCL_DEBUG'], os.environ['NCCL_DEBUG_SUBSYS'], os.environ['HF_TOKEN'])"
    result = _run(run_cli, sub_env, "--run-dir", str(run_dir), "--env", "NCCL_DEBUG=WARN",
                  "--env", "HF_TOKEN=hf_supersecret", "--", sys.executable, "-c", code)  # fmt: skip
    assert result.status == 0
    assert result.stdout == "WARN INIT,ENV hf_supersecret\n"  # the job sees the real values
    summary = (run_dir / "run.json").read_text()
    assert "hf_supersecret" not in summary and "HF_TOKEN" in summary
    captured = (run_dir / "output.log").read_text()
    assert "hf_supersecret" not in captured and "WARN INIT,ENV <redacted>" in captured


def test_usage_errors(run_cli, sub_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert _run(run_cli, sub_env).status == 2
    assert _run(run_cli, sub_env, "--").status == 2
    missing = _run(run_cli, sub_env, "--run-dir", str(tmp_path / "r4"), "--", "no-such-command-xyz")
    assert missing.status == 2 and "command not found" in missing.stderr
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    result = _run(run_cli, sub_env, "--run-dir", str(busy), "--", sys.executable, "-c", "0")
    assert result.status == 2 and "not empty" in result.stderr


def test_planted_duplicate_is_diagnosed_after_the_output(
    run_cli, sub_env, jobs: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    run_dir = tmp_path / "r5"
    result = _run(run_cli, sub_env, "--run-dir", str(run_dir), "--machine", "workstation-4gpu",
                  "--", sys.executable, str(jobs / "job.py"), "1", "--dup")  # fmt: skip
    assert result.status == 1
    tail = result.stderr[result.stderr.index("the job exited with code 1") :]
    assert "RM101" in tail or "Duplicate" in tail
    assert "0000:4F:00.0" in tail or "4f000" in tail
    diagnosis = json.loads((run_dir / "diagnosis.json").read_text())
    assert diagnosis["command"] == "explain" and diagnosis["verdict"] == "error"


def test_preflight_stops_a_bad_launch(run_cli, sub_env, jobs: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    marker = tmp_path / "ran"
    script = tmp_path / "train.py"  # a GPU job: 8 ranks select cuda:LOCAL_RANK on 4 GPUs
    script.write_text(
        f"open({str(marker)!r}, 'w')\nimport os, torch, torch.distributed as dist\n"
        "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\ndist.init_process_group('nccl')\n"
    )
    argv = ["--machine", "workstation-4gpu", "--run-dir", str(tmp_path / "r6"), "--",
            "torchrun", "--nproc-per-node", "8", str(script)]  # fmt: skip
    stopped = _run(run_cli, sub_env, *argv)
    assert stopped.status == 1 and not marker.exists()
    assert "--force" in stopped.stderr


@pytest.mark.torch
def test_real_torchrun_job(sub_env: dict[str, str], tmp_path: Path) -> None:
    pytest.importorskip("torch")
    script = tmp_path / "train.py"
    script.write_text(
        "import os, sys, torch, torch.distributed as dist\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(1) * (dist.get_rank() + 1)\n"
        "dist.all_reduce(t)\n"
        "print(f'rank {dist.get_rank()} sum {int(t.item())}', flush=True)\n"
        "dist.destroy_process_group()\n"
        "sys.exit(5 if dist.get_rank() == 1 else 0)\n"
    )
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-m", "rankmap", "run", "--run-dir", str(run_dir), "--",
           sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", str(script)]  # fmt: skip
    done = subprocess.run(
        cmd, env=sub_env, capture_output=True, text=True, timeout=300, cwd=tmp_path, check=False
    )
    assert "rank 0 sum 3" in done.stdout and "rank 1 sum 3" in done.stdout
    assert done.returncode == 1  # torchrun reports a failed worker with exit code 1
    assert json.loads((run_dir / "run.json").read_text())["exit_code"] == 1
    assert "ChildFailedError" in (run_dir / "output.log").read_text()


def test_preflight_starts_jobs_without_gpu_use(run_cli, sub_env, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A script that uses no GPU (here: no torch at all) has no placement to refuse."""
    script = tmp_path / "prep.py"
    script.write_text("import json\nprint(json.dumps({'rows': 3}))\n")
    result = _run(
        run_cli, sub_env, "--machine", "dgx-h100", "--run-dir", str(tmp_path / "r9"), "--",
        sys.executable, str(script),
    )  # fmt: skip
    assert result.status == 0, result.stderr
    assert result.stdout == '{"rows": 3}\n'
    assert "not running the job" not in result.stderr


def test_preflight_of_a_cpu_gloo_job_has_no_error() -> None:
    from rankmap.adapters.local import check_launch
    from rankmap.inventory import load_machine

    shapes = Path(__file__).parents[1] / "data" / "check" / "shapes"
    report = check_launch(
        ["torchrun", "--nproc-per-node", "8", str(shapes / "gloo_cpu" / "train.py")],
        machines=load_machine("dgx-h100"),
        env={},
        cwd=shapes,
    )
    assert not report.has_errors
    assert [f.code for f in report.findings] == ["RM031"]


def test_a_failure_with_no_known_cause_is_not_reported_as_ok(
    run_cli, sub_env, jobs: Path, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    # review 19: "OK diagnosis" next to a job that exited 1 read as success
    run_dir = tmp_path / "r9"
    result = _run(
        run_cli, sub_env, "--run-dir", str(run_dir), "--", sys.executable, str(jobs / "job.py"), "1"
    )
    assert result.status == 1
    assert "no cause of this family found in the job's output" in result.stderr
