"""The hostile-file matrix: every command that reads input x every hostile kind of input.

Binary, a huge line, /dev/zero, a FIFO, a 2 GB sparse file, a directory, UTF-16 with a BOM,
deep nesting and bombs (YAML aliases, shell loops, numbers). Each case ends within seconds with
either a result (0/1) or one line on stderr and exit 2 - never a hang, a traceback or exit 3.
A FIFO and /dev/zero run in a real subprocess with a timeout, so a blocking ``open()`` fails the
test instead of hanging the suite.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest
from qa_helpers import assert_one_line_error, subprocess_env

TORCHRUN = ["torchrun", "--nproc-per-node", "2", "train.py"]
TOPO = (
    "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tPHB\t0-63\t0\nGPU1\tPHB\t X \t0-63\t0\n"
)
LOG = (
    "[rank4]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
    "invalid usage\nDuplicate GPU detected : rank 4 and rank 0 both on CUDA device 4f000\n"
)


def _profile() -> str:
    return resources.files("rankmap.profiles").joinpath("workstation-4gpu.json").read_text()


@dataclass(frozen=True)
class Reader:
    """One way a command reads a file: argv around the path, a valid sample, its size cap."""

    argv: Callable[[str], list[str]]
    sample: Callable[[], str]
    capped: bool = True  # a huge line exceeds the cap (logs are streamed instead)
    env: Callable[[str], dict[str, str]] | None = None


READERS: dict[str, Reader] = {
    "explain FILE": Reader(lambda p: ["explain", p], lambda: LOG, capped=False),
    "doctor --machine": Reader(lambda p: ["doctor", "--machine", p], _profile),
    "check --machine": Reader(lambda p: ["check", "--machine", p, "--", *TORCHRUN], _profile),
    "explain --machine": Reader(lambda p: ["explain", "--machine", p, "-"], _profile),
    "topo --topo-file": Reader(lambda p: ["topo", "--topo-file", p], lambda: TOPO),
    "check --script": Reader(
        lambda p: ["check", "--machine", "dgx-h100", "--script", p, "--", *TORCHRUN],
        lambda: "import os, torch\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n",
    ),
    "explain --script": Reader(
        lambda p: ["explain", "--script", p, "-"],
        lambda: "import torch\ntorch.cuda.set_device(0)\n",
    ),
    "check --shell": Reader(
        lambda p: ["check", "--machine", "dgx-h100", "--shell", p],
        lambda: "#!/bin/bash\ntorchrun --nproc-per-node 2 train.py\n",
    ),
    "accelerate --config_file": Reader(
        lambda p: (
            ["check", "--machine", "dgx-h100", "--"]
            + ["accelerate", "launch", "--config_file", p, "train.py"]
        ),
        lambda: "compute_environment: LOCAL_MACHINE\nnum_processes: 2\n",
    ),
    "mpirun --hostfile": Reader(
        lambda p: (
            ["check", "--machine", "dgx-h100", "--", "mpirun", "--hostfile", p]
            + ["-np", "2", "python", "train.py"]
        ),
        lambda: "localhost slots=2\n",
    ),
    "deepspeed --hostfile": Reader(
        lambda p: (
            ["check", "--machine", "dgx-h100", "--"] + ["deepspeed", "--hostfile", p, "train.py"]
        ),
        lambda: "localhost slots=2\n",
    ),
    "RANKMAP_MACHINE": Reader(
        lambda p: ["probe", "--timeout", "10", "--json"],
        _profile,
        env=lambda p: {"RANKMAP_MACHINE": p, "RANK": "0", "WORLD_SIZE": "1"},
    ),
}


def _env(reader: Reader, path: str) -> dict[str, str]:
    return reader.env(path) if reader.env else {}


def _needs_torch(name: str) -> None:
    if name == "RANKMAP_MACHINE":
        pytest.importorskip("torch")


@pytest.mark.parametrize("name", READERS)
def test_fifo_and_dev_zero_end_at_once(run_proc, tmp_path: Path, name: str) -> None:
    _needs_torch(name)
    reader = READERS[name]
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, says in ((str(fifo), "FIFO"), ("/dev/zero", "device")):
        res = run_proc(reader.argv(path), env=_env(reader, path), timeout=60)
        assert_one_line_error(res.returncode, res.stderr)
        assert says in res.stderr and "not a regular file" in res.stderr


def _write_kind(tmp_path: Path, kind: str, sample: str) -> Path:
    path = tmp_path / f"input-{kind}"
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 64)
    elif kind == "sparse":
        with path.open("wb") as f:
            f.truncate(2 * 2**30)  # 2 GB of holes: only a bounded read may touch it
    elif kind == "huge-line":
        path.write_text(sample + "x" * (24 * 2**20) + "\n")
    elif kind == "utf16":
        path.write_bytes(sample.encode("utf-16"))
    elif kind == "empty":
        path.write_text("")
    return path


@pytest.mark.parametrize("kind", ["directory", "binary", "sparse", "huge-line", "utf16", "empty"])
@pytest.mark.parametrize("name", READERS)
def test_hostile_file_kinds(run_cli, tmp_path: Path, name: str, kind: str) -> None:
    _needs_torch(name)
    reader = READERS[name]
    path = _write_kind(tmp_path, kind, reader.sample())
    res = run_cli(reader.argv(str(path)), env=_env(reader, str(path)), stdin=LOG)
    if kind == "utf16":  # decoded like UTF-8: the same answer as the sample itself
        plain = tmp_path / "plain"
        plain.write_text(reader.sample())
        want = run_cli(reader.argv(str(plain)), env=_env(reader, str(plain)), stdin=LOG)
        assert res.status == want.status, res.stderr
        assert res.status in (0, 1), res.stderr
    elif kind == "huge-line" and not reader.capped:
        assert res.status in (0, 1), res.stderr  # a log is streamed, not refused
    elif kind == "binary" and name in ("check --script", "explain --script"):
        assert res.status in (0, 1), res.stderr  # "could not parse the script": a finding
    elif kind == "empty" and name in (
        "explain FILE",
        "check --script",
        "explain --script",
        "accelerate --config_file",  # an empty config: accelerate's defaults
    ):
        assert res.status in (0, 1), res.stderr  # nothing recognised / nothing to analyse
    else:
        assert_one_line_error(res.status, res.stderr)
    assert "Traceback" not in res.stderr


def test_utf16_from_stdin_reads_like_a_file(tmp_path: Path) -> None:
    data = LOG.encode("utf-16")
    (tmp_path / "log16").write_bytes(data)

    def explain(arg: str, stdin: bytes | None) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, "-m", "rankmap", "explain", "--json", arg],
            input=stdin if stdin is not None else b"",
            cwd=tmp_path,
            env=subprocess_env(),
            capture_output=True,
            timeout=60,
            check=False,
        )

    from_file, from_stdin = explain("log16", None), explain("-", data)
    assert from_file.returncode == 1, from_file.stderr
    assert from_stdin.returncode == 1, from_stdin.stderr

    def codes(done: subprocess.CompletedProcess[bytes]) -> list[tuple[str, str]]:
        return [(f["code"], f["title"]) for f in json.loads(done.stdout)["findings"]]

    assert codes(from_stdin) == codes(from_file) and codes(from_file)


@pytest.mark.parametrize(
    ("name", "content", "says"),
    [
        ("accelerate --config_file", "a: &a [x]\n" + "".join(
            f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
            for p, c in zip("abcdefghi", "bcdefghij", strict=True)
        ), ""),
        ("accelerate --config_file", "a: " + "[" * 50_000 + "]" * 50_000 + "\n", ""),
        ("doctor --machine", '{"hosts": [{"gpus": [{"nvml_index": 0, "uuid": "GPU-1", '
         '"memory_mib": 1e309}]}]}', "out of range"),
        ("doctor --machine", '{"hosts": [{"gpus": [{"nvml_index": ' + "9" * 5000 + "}]}]}",
         "too large"),
        ("check --shell", "for i in {0..99999999}; do torchrun train.py & done\n", "too many"),
        ("check --shell", "for i in $(seq 0 99999999); do torchrun train.py & done\n", "too many"),
        ("check --shell", "for ((i=0; i<99999999; i++)); do torchrun train.py & done\n",
         "too many"),
        ("check --shell", "for i in {0.." + "9" * 5000 + "}; do torchrun train.py; done\n",
         "too large"),
        ("mpirun --hostfile", "localhost slots=" + "9" * 5000 + "\n", "too large"),
        ("deepspeed --hostfile", "localhost slots=" + "9" * 5000 + "\n", "GPU count"),
    ],
    ids=["yaml-aliases", "yaml-nested", "json-1e309", "json-5000-digits", "brace-loop",
         "seq-loop", "c-for-loop", "loop-5000-digits", "mpi-slots", "deepspeed-slots"],
)  # fmt: skip
def test_bombs_are_usage_errors(run_cli, tmp_path: Path, name: str, content: str, says: str):
    reader = READERS[name]
    path = tmp_path / "bomb"
    path.write_text(content)
    res = run_cli(reader.argv(str(path)))
    if not says:  # PyYAML shares aliased nodes (no expansion); deep nesting is refused
        assert res.status in (0, 1, 2), res.stderr
        assert "internal error" not in res.stderr and "Traceback" not in res.stderr
        return
    assert_one_line_error(res.status, res.stderr)
    assert says in res.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ["srun", "--ntasks-per-node", "2", "--gpus-per-task=" + "9" * 13, "python", "t.py"],
        ["srun", "--ntasks-per-node", "2", "--gpus-per-task=" + "9" * 5000, "python", "t.py"],
        ["srun", "-n", "9" * 5000, "python", "t.py"],
        ["mpirun", "-npernode", "9" * 13, "python", "t.py"],
        ["accelerate", "launch", "--num_machines", "2", "--machine_rank", "x", "t.py"],
        ["accelerate", "launch", "--num_machines", "2", "--machine_rank", "9" * 5000, "t.py"],
        ["torchrun", "--nproc-per-node", "9" * 5000, "t.py"],
    ],
    ids=["gpus-per-task-13", "gpus-per-task-5000", "srun-n", "npernode", "machine-rank-x",
         "machine-rank-5000", "nproc-5000"],
)  # fmt: skip
def test_huge_or_bad_launch_numbers_are_usage_errors(run_cli, argv: list[str]) -> None:
    res = run_cli(["check", "--machine", "dgx-h100", "--", *argv])
    assert_one_line_error(res.status, res.stderr)


def test_huge_numbers_in_pasted_output_and_env_do_not_crash(run_cli, tmp_path: Path) -> None:
    big = "9" * 5000
    (tmp_path / "d.log").write_text(
        f"[rank{big}]: x\nDuplicate GPU detected : rank {big} and rank 1 both on CUDA device 4f000\n"
    )
    (tmp_path / "t.txt").write_text(TOPO.replace("0-63\t0\nGPU1", f"0-63\t{big}\nGPU1"))
    for argv in (
        ["explain", "d.log"],
        ["explain", "d.log", "--launch", f"torchrun --nproc-per-node {big} t.py"],
        ["topo", "--topo-file", "t.txt"],
        ["doctor", "--machine", "dgx-h100", "--env", f"CUDA_VISIBLE_DEVICES={big},1"],
        ["check", "--machine", "dgx-h100", "--env", f"CUDA_VISIBLE_DEVICES={big}", "--"] + TORCHRUN,
    ):
        res = run_cli(argv)
        assert res.status in (0, 1, 2), res.stderr
        assert "internal error" not in res.stderr and "Traceback" not in res.stderr
