"""Every credential form of the redaction catalogue, planted where users put them (a pasted
log, a launch command, --env), never reaches text, JSON, HTML or an error line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "core"))
from test_redact_catalogue import FORMS  # noqa: E402

DUPLICATE = (
    "[rank4]:[W] NCCL WARN Duplicate GPU detected : rank 4 and rank 0 both on CUDA device 18000\n"
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid usage\n"
)


def _clean(secret: str, *texts: str) -> None:
    for text in texts:
        assert secret not in text


@pytest.mark.parametrize(("form", "secret"), FORMS, ids=[f"form{i}" for i in range(len(FORMS))])
def test_explain_log_with_planted_secret(run_cli, tmp_path: Path, form: str, secret: str) -> None:
    log = tmp_path / "job.log"
    log.write_text(f"+ {form}\n{DUPLICATE}{form}\n", encoding="utf-8")
    html = tmp_path / "m.html"
    for extra in ([], ["--json"]):
        res = run_cli(["explain", str(log), "--html", str(html), *extra])
        assert res.status == 1, res.stderr
        _clean(secret, res.stdout, res.stderr, html.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("form", "secret"), FORMS, ids=[f"form{i}" for i in range(len(FORMS))])
def test_check_launch_with_planted_secret(run_cli, tmp_path: Path, form: str, secret: str) -> None:
    html = tmp_path / "c.html"
    argv = ["check", "--machine", "dgx-h100", "--html", str(html), "--env", f"NOTE={form}"]
    argv += ["--", "torchrun", "--nproc-per-node", "16", "train.py", "--note", form]
    for extra in ([], ["--json"]):
        res = run_cli(argv[:1] + extra + argv[1:])
        assert res.status in (0, 1), res.stderr
        _clean(secret, res.stdout, res.stderr, html.read_text(encoding="utf-8"))


@pytest.mark.parametrize(("form", "secret"), FORMS[:6], ids=[f"form{i}" for i in range(6)])
def test_error_lines_do_not_echo_secrets(run_cli, form: str, secret: str) -> None:
    res = run_cli(["check", "--machine", "dgx-h100", "--", "notalauncher", form])
    assert res.status == 2
    _clean(secret, res.stdout, res.stderr)
