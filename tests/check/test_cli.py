"""`rankmap check` end to end: the issue's "Done when" cases, golden output, bad input."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "data" / "check"
GOLDEN = DATA / "golden"
DONE_WHEN = [
    "check",
    "--machine",
    "dgx-h100",
    "--env",
    "CUDA_VISIBLE_DEVICES=0,1,2,3",
    "--script",
    str(DATA / "train_modulo.py"),
    "--json",
    "--",
    "torchrun",
    "--nproc_per_node",
    "8",
    "train.py",
]


def _json(result):  # type: ignore[no-untyped-def]
    return json.loads(result.stdout)


def test_done_when_modulo_duplicate(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(DONE_WHEN)
    assert result.status == 1, result.stderr
    doc = _json(result)
    first = doc["findings"][0]
    assert first["ranks"] == [0, 4]
    assert first["devices"] == ["0000:18:00.0"]  # GPU 0 of dgx-h100
    assert first["severity"] == "error"
    assert "torchrun --nproc_per_node 4 train.py" in first["fix"]
    assert (
        "Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 18000"
        in doc["predicted_errors"]
    )
    assert (
        "Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 18000"
        in doc["predicted_errors"]
    )
    assert any(
        line.startswith("Multiple Ranks are using the same GPU/Partition")
        for line in doc["predicted_errors"]
    )
    assert doc["launch"] == {
        **doc["launch"],
        "launcher": "torchrun",
        "nnodes": 1,
        "nproc_per_node": 8,
        "world_size": 8,
        "device_selection": "local_rank_modulo",
    }
    by_rank = {p["rank"]: p for p in doc["placements"]}
    assert by_rank[4]["cuda_index"] == 0 and by_rank[4]["pci_bus_id"] == "0000:18:00.0"


def test_done_when_set_device_ordinal(run_cli) -> None:  # type: ignore[no-untyped-def]
    argv = [
        a if not a.endswith("train_modulo.py") else str(DATA / "train_local.py") for a in DONE_WHEN
    ]
    result = run_cli(argv)
    assert result.status == 1
    doc = _json(result)
    first = doc["findings"][0]
    assert first["ranks"] == [4, 5, 6, 7]
    assert "invalid device ordinal" in first["title"]
    assert first["fix"]
    assert "RuntimeError: CUDA error: invalid device ordinal" in doc["predicted_errors"]
    failing = sorted(
        r["rank"] for r in doc["predicted_errors_by_rank"] if "invalid device ordinal" in r["line"]
    )
    assert failing == [4, 5, 6, 7]
    assert [
        p["local_rank"] for p in doc["placements"] if p.get("error") == "invalid device ordinal"
    ] == [4, 5, 6, 7]


def _normalise(text: str) -> str:
    return text.replace(str(DATA), "<DATA>")


@pytest.mark.parametrize(
    ("name", "argv"),
    [
        ("modulo", DONE_WHEN),
        (
            "mpirun",
            [
                "check",
                "--machine",
                "workstation-4gpu",
                "--script",
                str(DATA / "train_ompi.py"),
                "--json",
                "--",
                "mpirun",
                "-np",
                "4",
                "python",
                "train.py",
            ],
        ),
    ],
)
@pytest.mark.parametrize("fmt", ["json", "txt"])
def test_golden(run_cli, name: str, argv: list[str], fmt: str) -> None:  # type: ignore[no-untyped-def]
    if fmt == "txt":
        argv = [a for a in argv if a != "--json"]
    result = run_cli(argv, width=100)
    got = _normalise(result.stdout)
    path = GOLDEN / f"{name}.{fmt}"
    if os.environ.get("RANKMAP_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8")
    want = path.read_text(encoding="utf-8")
    if fmt == "txt" and "<DATA>" in want:
        # the checkout's path is part of a wrapped line: another checkout wraps it elsewhere
        got, want = " ".join(got.split()), " ".join(want.split())
    assert got == want


def test_healthy_exit_zero(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--script",
            str(DATA / "train_local.py"),
            "--",
            "torchrun",
            "--nproc-per-node",
            "8",
            "train.py",
        ]
    )
    assert result.status == 0, result.stdout
    assert "dgx-h100-01" in result.stdout and "0000:DB:00.0" in result.stdout


def test_assumption_without_script(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--json",
            "--",
            "torchrun",
            "--nproc-per-node",
            "8",
            "nothere.py",
        ]
    )
    doc = _json(result)
    assert result.status == 0
    assert doc["launch"]["device_selection"] == "assumed_local_rank"
    assert [f["code"] for f in doc["findings"]] == ["RM005"]


def test_many_nodes_summarised(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--nodes",
            "64",
            "--",
            "torchrun",
            "--nnodes",
            "64",
            "--nproc-per-node",
            "8",
            "train.py",
        ]
    )
    assert result.status == 0
    assert "64 identical nodes (dgx-h100-01 … dgx-h100-64)" in result.stdout
    assert len(result.stdout.splitlines()) < 40


def test_secrets_redacted(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--env",
            "HF_TOKEN=hf_supersecretvalue",
            "--json",
            "--",
            "env",
            "WANDB_API_KEY=wandbsecret123",
            "torchrun",
            "--nproc-per-node",
            "2",
            "train.py",
        ]
    )
    assert result.status == 0
    assert "hf_supersecretvalue" not in result.stdout and "wandbsecret123" not in result.stdout


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ["check", "--machine", "dgx-h100", "--", "frobnicate", "train.py"],
            "unknown launcher 'frobnicate'",
        ),
        (["check", "--machine", "dgx-h100", "torchrun", "train.py"], "after `--`"),
        (["check", "--machine", "dgx-h100", "--"], "missing launch command"),
        (
            [
                "check",
                "--machine",
                "dgx-h100",
                "--",
                "accelerate",
                "launch",
                "--config_file",
                str(DATA / "accel_bad.yaml"),
                "t.py",
            ],
            "accel_bad.yaml:4: malformed YAML",
        ),
        (
            [
                "check",
                "--machine",
                "dgx-h100",
                "--",
                "deepspeed",
                "-H",
                str(DATA / "ds_bad_hostfile"),
                "t.py",
            ],
            "ds_bad_hostfile:2: Hostfile contains a bad entry",
        ),
        (
            [
                "check",
                "--machine",
                "dgx-h100",
                "--",
                "mpirun",
                "--hostfile",
                str(DATA / "accel_bad.yaml"),
                "python",
                "t.py",
            ],
            "accel_bad.yaml:1: not a hostfile line",
        ),
        (
            ["check", "--machine", "dgx-h100", "--env", "NOEQUALS", "--", "torchrun", "t.py"],
            "expected KEY=VALUE",
        ),
        (
            [
                "check",
                "--machine",
                "dgx-h100",
                "--",
                "torchrun",
                "--nproc-per-node",
                "eight",
                "t.py",
            ],
            "--nproc-per-node",
        ),
        (
            ["check", "--machine", "dgx-h100", "--", "torchrun", "--bogus-flag", "t.py"],
            "unrecognized option",
        ),
        (["check", "--machine", "dgx-h100", "--nodes", "0", "--", "torchrun", "t.py"], "--nodes"),
        (
            [
                "check",
                "--machine",
                "dgx-h100",
                "--",
                "accelerate",
                "launch",
                "--config_file",
                "nope.yaml",
                "t.py",
            ],
            "cannot read",
        ),
        (
            ["check", "--machine", "dgx-h100", "--shell", str(DATA / "train_local.py")],
            "no launch command found",
        ),
        (["check", "--machine", "no-such-profile", "--", "torchrun", "t.py"], "no-such-profile"),
        (
            [
                "check",
                "--machine",
                "dgx-h100",
                "--",
                "mpirun",
                "-np",
                "1000000000",
                "python",
                "t.py",
            ],
            "more than rankmap simulates",
        ),
        (
            ["check", "--machine", "dgx-h100", "--nodes", "999999", "--", "torchrun", "t.py"],
            "more than rankmap simulates",
        ),
        (
            ["check", "-m", "dgx-h100", "--", "horovodrun", "-np", "16", "-H", "a:8", "x.py"],
            "requested 16 processes but the hosts have 8 slot(s)",
        ),
        (["check", "-m", "dgx-h100", "--", "horovodrun", "python", "x.py"], "-np is required"),
    ],
)
def test_bad_input_exit_2(run_cli, argv: list[str], needle: str) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(argv)
    assert result.status == 2, (result.stdout, result.stderr)
    assert needle in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) <= 2


def test_unknown_launcher_lists_supported(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["check", "--machine", "dgx-h100", "--", "ray", "job", "submit"])
    assert result.status == 2
    for name in ("torchrun", "accelerate launch", "deepspeed", "srun", "mpirun", "horovodrun"):
        assert name in result.stderr


def test_untraced_index_assumes_local_rank(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    script = tmp_path / "train.py"
    script.write_text("import torch\ntorch.cuda.set_device(pick_gpu())\n")
    result = run_cli(
        [
            "check",
            "--machine",
            "dgx-h100",
            "--json",
            "--",
            "torchrun",
            "--nproc-per-node",
            "8",
            str(script),
        ]
    )
    doc = _json(result)
    assert result.status == 0
    assert doc["launch"]["device_selection"] == "unknown"
    first = doc["findings"][0]
    assert (first["code"], first["severity"]) == ("RM030", "info")
    assert "pick_gpu()" in first["title"] and "train.py:2" in first["title"]
    assert any("pick_gpu()` not followed" in e for e in first["evidence"])
    assert [p["nvml_index"] for p in doc["placements"]] == list(range(8))


def test_no_machine_without_nvml_is_unavailable(run_cli) -> None:  # type: ignore[no-untyped-def]
    from rankmap.findings import finding

    def no_nvml():  # type: ignore[no-untyped-def]
        return None, [finding("RM001", "NVML is not available (LibraryNotFound)")]

    result = run_cli(["check", "--", "torchrun", "train.py"], inventory_source=no_nvml)
    assert result.status == 3
    assert "--machine" in result.stderr


def test_secret_script_arguments_redacted(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(
        [
            "check",
            "--machine",
            "workstation-4gpu",
            "--json",
            "--",
            "torchrun",
            "--nproc-per-node",
            "8",
            "train.py",
            "--hf-token",
            "hf_abcdefgh123",
            "--api_key=sk-verysecret",
        ]
    )
    assert result.status == 1
    assert "hf_abcdefgh123" not in result.stdout and "sk-verysecret" not in result.stdout
    assert "<redacted>" in result.stdout
