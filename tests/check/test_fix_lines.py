"""Every fix is code or a command that works as written, and one finding stands per root cause.

A command fix is checked by running ``check`` on it: the error it fixes is gone. A code fix is
run against a stand-in for torch with the environment of the launcher it is for.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace

from rankmap.adapters.local import check_launch
from rankmap.findings import Finding, Report
from rankmap.inventory import load_machine

DATA = Path(__file__).parents[1] / "data" / "check"


def _check(argv: list[str], machines: tuple[str, ...] = ("dgx-h100",), **kw: object) -> Report:
    hosts = [h for m in machines for h in load_machine(m)]
    return check_launch(argv, machines=hosts, env=kw.pop("env", {}), cwd=DATA, **kw)  # type: ignore[arg-type]


def _errors(report: Report) -> list[Finding]:
    return [f for f in report.findings if f.severity.value == "error"]


def _command(fix: str) -> list[str]:
    return shlex.split(fix.split("  #", 1)[0])


def test_rm501_fix_runs_as_written() -> None:
    report = _check(
        ["srun", "-N", "2", "--ntasks-per-node=4", "--gpus-per-task=1", "python", "train_slurm.py"]
    )
    fix = next(f.fix for f in report.findings if f.code == "RM501")
    chosen: list[int] = []
    cuda = SimpleNamespace(set_device=chosen.append, device_count=lambda: 1)
    environ = {"SLURM_LOCALID": "3"}  # srun sets no LOCAL_RANK
    exec(
        fix.split("  #", 1)[0],
        {"torch": SimpleNamespace(cuda=cuda), "os": SimpleNamespace(environ=environ)},
    )  # noqa: S102, E501
    assert chosen == [0]  # the only GPU the task sees


def test_rm601_fix_is_a_launch_without_the_shared_gpu() -> None:
    mig = load_machine("a100-mig")[0].gpus[0].mig_devices
    argv = ["torchrun", "--nproc-per-node", "2", "--virtual-local-rank", "train_local.py"]
    env = {"CUDA_VISIBLE_DEVICES": f"{mig[0].uuid},{mig[1].uuid}"}
    report = _check(argv, ("a100-mig",), env=env)
    fix = next(f.fix for f in report.findings if f.code == "RM601")
    assert fix.startswith(f"CUDA_VISIBLE_DEVICES={mig[0].uuid} torchrun --nproc-per-node 1 ")
    assert _errors(_check(_command(fix), ("a100-mig",))) == []


def test_rm801_hostid_is_one_finding_with_an_unset() -> None:
    argv = ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train_local.py"]
    report = _check(argv, env={"NCCL_HOSTID": "cluster"}, nodes=2)
    errors = _errors(report)
    assert [f.code for f in errors] == ["RM801"]  # one cause, all 8 shared GPUs
    assert "7 more GPU(s)" in errors[0].title and errors[0].ranks == (0, 8)
    assert errors[0].fix.startswith("unset NCCL_HOSTID")
    assert _errors(_check(argv, env={}, nodes=2)) == []


def test_rm801_same_machine_twice_names_a_hostname_command() -> None:
    argv = ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train_local.py"]
    errors = _errors(_check(argv, ("dgx-h100", "dgx-h100")))
    assert [f.code for f in errors] == ["RM801"]
    assert _command(errors[0].fix) == ["sudo", "hostnamectl", "set-hostname", "dgx-h100-01-2"]


def test_nested_launchers_are_one_finding_with_their_consequence() -> None:
    argv = ["srun", "-N", "1", "--ntasks-per-node", "4", "--gres=gpu:8"]
    inner = ["torchrun", "--nproc-per-node", "4", "train_local.py"]
    errors = _errors(_check([*argv, *inner]))
    assert [f.code for f in errors] == ["RM904"]
    f = errors[0]
    assert "ranks 0, 4, 8, 12 all use GPU 0 (0000:18:00.0)" in f.title
    assert "Duplicate GPU detected : rank 0 and rank 4" in f.detail
    assert f.devices[:1] == ("0000:18:00.0",) and len(f.ranks) == 16
    assert _errors(_check(_command(f.fix))) == []


def test_nested_mpirun_fix_is_a_command_with_one_launcher_per_node() -> None:
    argv = ["mpirun", "-np", "2", "-N", "2", "-x", "FOO=1"]
    inner = ["torchrun", "--nproc-per-node", "8", "train_local.py"]
    report = _check([*argv, *inner])
    fix = next(f.fix for f in report.findings if f.code == "RM904")
    assert _command(fix) == ["mpirun", "-np", "1", "--npernode", "1", "-x", "FOO=1", *inner]
    assert "RM904" not in {f.code for f in _check(_command(fix)).findings}
