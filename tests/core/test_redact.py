"""Secrets never leak: credential-like names are redacted, URL passwords masked."""

import pytest

from rankmap.redact import REDACTED, is_secret_name, redact_env, redact_text


@pytest.mark.parametrize(
    "name",
    [
        "HF_TOKEN",
        "WANDB_API_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "DB_PASSWORD",
        "GOOGLE_CREDENTIALS",
        "OPENAI_API_KEY",
        "SSH_KEY",
        "GITHUB_TOKEN",
        "MY_PRIVATE_KEY",
        "SESSION_COOKIE",
    ],
)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)
    assert redact_env({name: "s3cr3t-value"}) == {name: REDACTED}


@pytest.mark.parametrize(
    "name",
    [
        "CUDA_VISIBLE_DEVICES",
        "NCCL_DEBUG",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "NCCL_IB_HCA",
        "TORCH_NCCL_ASYNC_ERROR_HANDLING",
        "SLURM_JOB_GPUS",
        "PATH",
    ],
)
def test_ordinary_names_stay(name: str) -> None:
    assert not is_secret_name(name)
    assert redact_env({name: "0,1"}) == {name: "0,1"}


def test_url_credentials_masked_whatever_the_name() -> None:
    env = {"DATABASE_URL_RO": "postgres://user:hunter2@db:5432/x"}
    assert "hunter2" not in redact_env(env)["DATABASE_URL_RO"]


def test_free_text_redaction() -> None:
    env = {"HF_TOKEN": "hf_abcdefgh"}
    assert "hf_abcdefgh" not in redact_text("export HF_TOKEN=hf_abcdefgh; torchrun", env)
