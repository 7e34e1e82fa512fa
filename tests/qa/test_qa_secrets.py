"""Secrets never leak: not in text, JSON, HTML, error lines or notes, whatever the route in."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from qa_helpers import assert_one_line_error

SECRETS = ("hfS3CRET1", "wandbS3CRET2", "awsS3CRET3", "pgS3CRET4", "argS3CRET5", "argS3CRET6")
ENV = {
    "HF_TOKEN": "hfS3CRET1",
    "WANDB_API_KEY": "wandbS3CRET2",
    "AWS_SECRET_ACCESS_KEY": "awsS3CRET3",
    "DATABASE_URL": "postgres://user:pgS3CRET4@db:5432/x",
}
SCRIPT_ARGS = ["--hf_token", "argS3CRET5", "--api-key=argS3CRET6"]


def _assert_clean(*texts: str) -> None:
    for text in texts:
        for secret in SECRETS:
            assert secret not in text


def _env_flags() -> list[str]:
    return [a for k, v in ENV.items() for a in ("--env", f"{k}={v}")]


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_check_everywhere(run_cli, tmp_path: Path, as_json: bool):
    prefix = [f"{k}={v}" for k, v in ENV.items()]
    argv = [
        "check",
        "--machine",
        "dgx-h100",
        "--inherit-env",
        "--html",
        str(tmp_path / "m.html"),
        *_env_flags(),
    ]
    argv += ["--json"] if as_json else []
    argv += ["--", *prefix, "torchrun", "--nproc-per-node", "16", "train.py", *SCRIPT_ARGS]
    res = run_cli(argv, env=ENV)
    assert res.status == 1, res.stderr
    _assert_clean(res.stdout, res.stderr, (tmp_path / "m.html").read_text())


def test_check_notes_mask_url_passwords(run_cli):
    res = run_cli(
        ["check", "--machine", "dgx-h100", "--", "deepspeed"]
        + ["--hostfile", "postgres://user:pgS3CRET4@db/x", "train.py"]
    )
    assert res.status in (0, 1), res.stderr
    _assert_clean(res.stdout, res.stderr)


def test_doctor_everywhere(run_cli, tmp_path: Path):
    for extra in ([], ["--json"], ["--save", "saved.json"]):
        res = run_cli(
            ["doctor", "--machine", "dgx-h100", "--inherit-env", *_env_flags(), *extra], env=ENV
        )
        assert res.status == 0, res.stderr
        _assert_clean(res.stdout, res.stderr)
    _assert_clean((tmp_path / "saved.json").read_text())


@pytest.mark.parametrize("bad", ["HF-TOKEN", "1HF_TOKEN", "HF TOKEN"])
def test_bad_env_name_error_does_not_echo_the_value(run_cli, bad: str):
    res = run_cli(["doctor", "--env", f"{bad}=hfS3CRET1"])
    assert_one_line_error(res.status, res.stderr)
    _assert_clean(res.stderr)


LOG = """\
+ HF_TOKEN=hfS3CRET1 torchrun --nproc-per-node 2 train.py --hf_token argS3CRET5 --api-key=argS3CRET6
export WANDB_API_KEY=wandbS3CRET2
[rank1]: Traceback (most recent call last):
[rank1]:   File "train.py", line 3, in <module>
[rank1]:     torch.cuda.set_device(7)  # AWS_SECRET_ACCESS_KEY=awsS3CRET3
[rank1]: RuntimeError: CUDA error: invalid device ordinal HF_TOKEN=hfS3CRET1
torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage, NCCL version 2.19.3
ncclInvalidUsage: This usually reflects invalid usage of NCCL library.
Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000 HF_TOKEN=hfS3CRET1 --api-key=argS3CRET6
Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 1000 url=postgres://user:pgS3CRET4@db/x
"""


@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_explained_log(run_cli, tmp_path: Path, as_json: bool):
    (tmp_path / "job.log").write_text(LOG)
    argv = [
        "explain",
        "job.log",
        "--html",
        str(tmp_path / "e.html"),
        "--launch",
        LOG.splitlines()[0][2:],
    ]
    res = run_cli(argv + (["--json"] if as_json else []), env=ENV)
    assert res.status == 1, res.stderr
    if as_json:
        assert any(f.get("evidence") for f in json.loads(res.stdout)["findings"])
    _assert_clean(res.stdout, res.stderr, (tmp_path / "e.html").read_text())


def test_run_env_prefix_is_environment_not_the_program(run_cli, tmp_path: Path):
    code = "import os, sys; sys.exit(0 if os.environ['HF_TOKEN'] == 'hfS3CRET1' else 5)"
    res = run_cli(
        ["run", "--machine", "dgx-h100", "--run-dir", "r", "--", "HF_TOKEN=hfS3CRET1"]
        + [sys.executable, "-c", code],
        env={"PATH": "/usr/bin:/bin"},
    )
    assert res.status == 0, res.stderr
    _assert_clean(res.stdout, res.stderr, *(p.read_text() for p in (tmp_path / "r").iterdir()))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 8 train.py", None),
        ("NCCL_SOCKET_IFNAME=eth0 --master_port=29500 --local-rank=3", None),
        ("HF_TOKEN=abc123 torchrun t.py", "HF_TOKEN=<redacted> torchrun t.py"),
        ("t.py --hf_token abc123 --lr 1", "t.py --hf_token <redacted> --lr 1"),
        ("t.py --api-key='a b c' --lr 1", "t.py --api-key=<redacted> --lr 1"),
        ("t.py --auth-token --lr 1", None),  # a flag without a value keeps the next flag
        ("db=postgres://u:pw@h/x", "db=postgres://<redacted>@h/x"),
    ],
)
def test_redact_free_text(text: str, expected: str | None):
    from rankmap.redact import redact_free_text

    assert redact_free_text(text) == (text if expected is None else expected)
