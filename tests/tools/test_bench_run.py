"""rankmap bench for real: torchrun with gloo on CPU, and the CLI's usage errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rankmap.bench.sizes import busbw_factor


def test_bad_sizes_are_usage_errors(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["bench", "-b", "1.5K"])
    assert result.status == 2
    assert "bad size" in result.stderr
    assert run_cli(["bench", "-b", "4M", "-e", "1K"]).status == 2
    assert run_cli(["bench", "-f", "1"]).status == 2
    assert run_cli(["bench", "-n", "0"]).status == 2
    assert "Traceback" not in result.stderr


def _torchrun(env: dict[str, str], nproc: int, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc-per-node",
        str(nproc),
    ]
    cmd += ["-m", "rankmap", "bench", "--backend", "gloo", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300, check=False)


@pytest.mark.torch
def test_torchrun_4_ranks_busbw_follows_formula(sub_env: dict[str, str]) -> None:
    pytest.importorskip("torch")
    done = _torchrun(sub_env, 4, "-b", "1K", "-e", "64K", "-w", "2", "-n", "5", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)  # rank 0 only: exactly one JSON document on stdout
    assert doc["schema"] == "rankmap/1" and doc["command"] == "bench"
    assert doc["world_size"] == 4 and doc["backend"] == "gloo"
    sizes = [r["size"] for r in doc["results"]]
    assert sizes == [1024 << i for i in range(7)]
    for r in doc["results"]:
        assert r["wrong"] == 0
        assert r["count"] == r["size"] // 4
        algbw = r["size"] / 1e9 / (r["time_us"] / 1e6)
        # JSON values are rounded to 6 decimals: allow that rounding (tiny values under load)
        assert r["algbw"] == pytest.approx(algbw, rel=1e-3, abs=1e-6)
        assert r["busbw"] == pytest.approx(
            r["algbw"] * busbw_factor("all_reduce", 4), rel=1e-3, abs=3e-6
        )
    avg = sum(r["busbw"] for r in doc["results"]) / len(doc["results"])
    assert doc["avg_busbw"] == pytest.approx(avg, rel=1e-3, abs=1e-6)
    assert "rankmap bench: 1K all_reduce" in done.stderr  # progress on stderr, not in the JSON


@pytest.mark.torch
@pytest.mark.parametrize("op", ["all_gather", "reduce_scatter", "broadcast"])
def test_other_ops_check_results(sub_env: dict[str, str], op: str) -> None:
    pytest.importorskip("torch")
    done = _torchrun(sub_env, 2, "--op", op, "-b", "1K", "-e", "4K", "-w", "1", "-n", "2", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    doc = json.loads(done.stdout)
    assert [r["op"] for r in doc["results"]] == [op] * 3
    assert all(r["wrong"] == 0 for r in doc["results"])
    factor = busbw_factor(op, 2)
    assert all(
        r["busbw"] == pytest.approx(r["algbw"] * factor, rel=1e-3, abs=1e-6) for r in doc["results"]
    )


@pytest.mark.torch
def test_text_table_and_min_busbw_failure(sub_env: dict[str, str]) -> None:
    pytest.importorskip("torch")
    done = _torchrun(sub_env, 2, "-b", "1K", "-e", "2K", "-w", "1", "-n", "2", "--min-busbw", "1e6")
    assert done.returncode == 1
    assert "#wrong" in done.stdout and "# Avg bus bandwidth" in done.stdout
    assert done.stdout.count("# Avg bus bandwidth") == 1  # rank 0 prints, rank 1 stays silent
    assert "RM993" in done.stdout


def test_single_process_without_launcher(run_cli) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("torch")
    result = run_cli(["bench", "--backend", "gloo", "-b", "1K", "-e", "2K", "-n", "2", "--json"])
    assert result.status == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["world_size"] == 1
    assert [r["busbw"] for r in doc["results"]] == [0.0, 0.0]  # 2(n-1)/n = 0 for one rank
    assert all(r["wrong"] == 0 for r in doc["results"])
