"""Real torchrun jobs on CPU: a profile stands in for the GPUs, the store is the job's own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from probe_helpers import JOB, base_env, free_port, rank_results, run_group, run_ranks, torchrun

pytestmark = [pytest.mark.torch, pytest.mark.usefixtures("need_torch")]


def test_duplicate_layout_raises_on_every_rank_naming_the_pairs(tmp_path: Path) -> None:
    env = base_env(
        RMTEST_OUT=str(tmp_path),
        RMTEST_DEVICE_MOD="2",
        RMTEST_PHASES="verify,init,allreduce",
        RANKMAP_MACHINE="workstation-4gpu",
    )
    torchrun(4, [str(JOB)], env, cwd=tmp_path)
    results = rank_results(tmp_path)
    assert sorted(results) == [0, 1, 2, 3]
    for rank, res in results.items():
        event = res["events"][0]
        assert isinstance(event, dict) and event.get("raised") == "RankMapError", (rank, res)
        message = str(event["message"])
        assert "ranks 0 and 2" in message and "ranks 1 and 3" in message
        assert "0000:4F:00.0" in message and "4f000" in message
        assert "RM103" in message
        assert len(res["events"]) == 1  # it stopped before init_process_group


def test_cli_out_of_range_ranks_with_two_visible_gpus(tmp_path: Path) -> None:
    env = base_env(CUDA_VISIBLE_DEVICES="0,1", RANKMAP_MACHINE="workstation-4gpu")
    run = torchrun(4, ["-m", "rankmap", "probe", "--timeout", "60", "--json"], env, cwd=tmp_path)
    start = run.stdout.index("{")
    doc = json.loads(run.stdout[start : run.stdout.rindex("}") + 1])
    assert doc["command"] == "probe" and doc["verdict"] == "error"
    ordinal = [f for f in doc["findings"] if "invalid device ordinal" in f["title"]]
    assert len(ordinal) == 1
    assert ordinal[0]["ranks"] == [2, 3]
    assert ordinal[0]["code"] == "RM201"  # CUDA_VISIBLE_DEVICES narrowed 4 GPUs to 2
    by_rank = {p["rank"]: p for p in doc["placements"]}
    assert by_rank[0]["pci_bus_id"] == "0000:4F:00.0" and by_rank[1]["nvml_index"] == 1
    assert "invalid device ordinal" in by_rank[3]["error"]
    assert run.status != 0  # every rank exits 1; torchrun reports the failure


def test_healthy_job_is_clean_and_gloo_allreduce_works_afterwards(tmp_path: Path) -> None:
    env = base_env(
        RMTEST_OUT=str(tmp_path),
        RMTEST_PHASES="verify,init,verify,allreduce",
        RANKMAP_MACHINE="workstation-4gpu",
    )
    run = torchrun(4, [str(JOB)], env, cwd=tmp_path)
    assert run.status == 0, run.stderr[-2000:]
    results = rank_results(tmp_path)
    assert sorted(results) == [0, 1, 2, 3]
    for res in results.values():
        before, init, after, reduce = res["events"]
        assert isinstance(before, dict) and before["verify"] == "ok"
        assert init == "init"
        assert isinstance(after, dict) and after["verify"] == "ok"  # default group's store
        assert reduce == {"allreduce": 10.0}


def test_cli_healthy_text_output(tmp_path: Path) -> None:
    env = base_env(RANKMAP_MACHINE="workstation-4gpu")
    run = torchrun(2, ["-m", "rankmap", "probe", "--timeout", "60"], env, cwd=tmp_path)
    assert run.status == 0, run.stderr[-2000:]
    assert "OK rankmap probe: 2 rank(s) on 1 node(s)" in run.stdout
    assert "0000:52:00.0" in run.stdout
    assert run.stdout.count("rankmap probe:") == 1  # only rank 0 prints


def test_rank_that_exits_early_is_reported_missing_in_time(tmp_path: Path) -> None:
    env = base_env(
        RMTEST_OUT=str(tmp_path),
        RMTEST_EXIT_RANK="3",
        RMTEST_TIMEOUT="6",
        RANKMAP_MACHINE="workstation-4gpu",
    )
    torchrun(4, [str(JOB)], env, cwd=tmp_path)
    results = rank_results(tmp_path)
    assert results[3]["events"] == ["exited"]
    events = {rank: results[rank]["events"][0] for rank in (0, 1, 2)}
    for rank, event in events.items():
        assert isinstance(event, dict) and event["raised"] == "ProbeTimeout"
        assert "rank 3 never reported within 6 s" in str(event["message"])
        assert "expected on ws-01" in str(event["message"])
        # within the timeout + 2 s of rank 0's start, which may come seconds after this rank's
        # on a loaded machine (torch loads that long); measured inside the ranks
        late = max(0.0, float(events[0]["start"]) - float(event["start"]))
        assert float(event["seconds"]) < 8.0 + late, (rank, event, late)


def test_rank_zero_that_exits_early_makes_the_others_raise(tmp_path: Path) -> None:
    env = base_env(
        RMTEST_OUT=str(tmp_path),
        RMTEST_EXIT_RANK="0",
        RMTEST_TIMEOUT="4",
        RANKMAP_MACHINE="workstation-4gpu",
    )
    torchrun(2, [str(JOB)], env, cwd=tmp_path)
    event = rank_results(tmp_path)[1]["events"][0]
    assert isinstance(event, dict) and event["raised"] == "ProbeTimeout"
    assert "rank 0 published no verdict within 4 s" in str(event["message"])
    assert float(event["seconds"]) < 6.0


def test_cli_missing_rank_exits_3(tmp_path: Path) -> None:
    # rank 1 probes with a world of 3 although only 2 processes exist: rank 2 never comes.
    env = base_env(RANKMAP_MACHINE="workstation-4gpu")
    script = tmp_path / "fake_world.py"
    script.write_text(
        "import os, sys\nos.environ['WORLD_SIZE'] = '3'\n"
        "from rankmap.cli import main\nsys.exit(main(['probe', '--timeout', '6']))\n"
    )
    run = torchrun(2, [str(script)], env, cwd=tmp_path)
    assert "rank 2 never reported within 6 s" in run.stdout
    assert "exitcode  : 3" in run.stderr


def test_cli_unreachable_store_exits_3_naming_the_address(tmp_path: Path) -> None:
    port = free_port()
    env = base_env(
        RANK="1",
        WORLD_SIZE="2",
        LOCAL_RANK="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHELASTIC_USE_AGENT_STORE="True",
        RANKMAP_MACHINE="workstation-4gpu",
    )
    argv = [sys.executable, "-m", "rankmap", "probe", "--timeout", "2"]
    run = run_group(argv, env, timeout=30, cwd=tmp_path)
    assert run.status == 3
    assert f"127.0.0.1:{port} unreachable" in run.stderr
    assert "Traceback" not in run.stderr
    assert "frame #" not in run.stderr  # c10d's C++ retry logs stay out of the probe's output


def test_verify_fails_open_when_store_unreachable(tmp_path: Path) -> None:
    port = free_port()
    code = (
        "import warnings, rankmap\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    report = rankmap.verify(timeout=1.5)\n"
        "ours = [x for x in w if 'rankmap.verify' in str(x.message)]\n"
        "print(report.verdict, [f.code for f in report.findings], len(ours))\n"
        "try:\n"
        "    rankmap.verify(timeout=1.5, strict=True)\n"
        "except rankmap.RankMapError as exc:\n"
        "    print('strict raised', type(exc).__name__)\n"
    )
    env = base_env(
        RANK="1",
        WORLD_SIZE="2",
        LOCAL_RANK="1",
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        TORCHELASTIC_USE_AGENT_STORE="True",
        RANKMAP_MACHINE="workstation-4gpu",
    )
    run = run_group([sys.executable, "-c", code], env, timeout=30, cwd=tmp_path)
    assert run.status == 0, run.stderr
    assert "warning ['RM061'] 1" in run.stdout
    assert "strict raised UnavailableError" in run.stdout


def test_hosted_store_without_torchrun_then_job_init_reuses_it(tmp_path: Path) -> None:
    """srun/mpirun shape: rank 0 hosts the store on MASTER_PORT; the job's init works after."""
    port = free_port()
    code = (
        "import os, torch, torch.distributed as dist, rankmap\n"
        "r = rankmap.verify(timeout=60)\n"
        "dist.init_process_group('gloo')\n"
        "t = torch.ones(1); dist.all_reduce(t)\n"
        "dist.destroy_process_group()\n"
        "print('ok', r.verdict, t.item())\n"
    )
    envs = [
        base_env(**_mpirun_vars(rank, 2, port), RANK=str(rank), WORLD_SIZE="2",
                 RANKMAP_MACHINE="workstation-4gpu")
        for rank in range(2)
    ]  # fmt: skip
    for run in run_ranks([sys.executable, "-c", code], envs, timeout=120, cwd=tmp_path):
        assert run.status == 0, run.stderr[-2000:]
        assert "ok ok 2.0" in run.stdout


def _mpirun_vars(rank: int, world: int, port: int) -> dict[str, str]:
    """What Open MPI's mpirun sets for a rank of one node, with the rendezvous address."""
    return {
        "OMPI_COMM_WORLD_RANK": str(rank),
        "OMPI_COMM_WORLD_SIZE": str(world),
        "OMPI_COMM_WORLD_LOCAL_RANK": str(rank),
        "OMPI_COMM_WORLD_LOCAL_SIZE": str(world),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


@pytest.mark.parametrize("kind", ["file", "port"])
def test_separate_store_by_env(tmp_path: Path, kind: str) -> None:
    """RANKMAP_STORE_FILE / RANKMAP_STORE_PORT: plain processes, no launcher store at all."""
    extra = (
        {"RANKMAP_STORE_FILE": str(tmp_path / "store")}
        if kind == "file"
        else {"RANKMAP_STORE_PORT": str(free_port()), "RANKMAP_STORE_ADDR": "127.0.0.1"}
    )
    code = "import rankmap; r = rankmap.verify(timeout=60); print('ok', r.verdict)\n"
    envs = [
        base_env(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2",
                 RANKMAP_MACHINE="workstation-4gpu", **extra)
        for rank in range(2)
    ]  # fmt: skip
    for run in run_ranks([sys.executable, "-c", code], envs, timeout=120, cwd=tmp_path):
        assert run.status == 0, run.stderr[-2000:]
        assert "ok ok" in run.stdout


def test_probe_command_under_mpirun_hosts_rankmaps_own_store(tmp_path: Path) -> None:
    """``rankmap probe`` in the srun/mpirun shape (MASTER_ADDR/PORT, no torchrun): the command
    exits after, so rank 0 hosts rankmap's own store (bounded memory) on MASTER_PORT, not a
    TCPStore, and every rank gets the verdict through it."""
    port = free_port()
    envs = [base_env(**_mpirun_vars(rank, 2, port), RANKMAP_MACHINE="workstation-4gpu")
            for rank in range(2)]  # fmt: skip
    argv = [sys.executable, "-m", "rankmap", "probe", "--json", "--timeout", "60"]
    runs = run_ranks(argv, envs, timeout=120, cwd=tmp_path)
    for run in runs:
        assert run.status == 0, run.stderr[-2000:]
    doc = json.loads(runs[0].stdout)  # rank 0 reports; rank 1 exits with the verdict's status
    assert doc["verdict"] == "ok" and runs[1].stdout == ""
    assert doc["store"] == f"rankmap store 127.0.0.1:{port} (hosted by rank 0)"
    assert sorted(pl["rank"] for pl in doc["placements"]) == [0, 1]
