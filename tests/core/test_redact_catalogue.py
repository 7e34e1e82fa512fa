"""The redaction catalogue: every credential form is masked, and what a diagnosis needs
(bus ids, GPU/MIG UUIDs, paths, hashes, ordinary names) survives."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.findings import Report, finding
from rankmap.redact import REDACTED, is_secret_name, redact_free_text, redact_report, scrub

# Token bodies are made up here; their shapes follow each vendor's documented format.
GH = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567"
OPENAI = "sk-proj-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2"
AWS = "AKIA" + "IOSFODNN7EXAMPLE"
SLACK = "xoxb-" + "123456789012-abcdefABCDEF"
JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1rwW1gFWFOEjXk"
OPAQUE = "Qm9vUzNjcmV0VmFsdWU"  # no vendor shape: only its name gives it away

FORMS = [
    (f"Authorization: Bearer {OPAQUE}", OPAQUE),
    (f"authorization=Basic {OPAQUE}", OPAQUE),
    (f"curl -H 'Authorization: token {OPAQUE}' https://x", OPAQUE),
    (f"X-Api-Key: {OPAQUE}", OPAQUE),
    (f"hf_token: {OPAQUE}", OPAQUE),
    (f"API_KEY = {OPAQUE}", OPAQUE),
    (f'api_key = "{OPAQUE}"', OPAQUE),
    (f'{{"WANDB_API_KEY": "{OPAQUE}", "lr": 3}}', OPAQUE),
    (f"{{'password': '{OPAQUE}'}}", OPAQUE),
    (f"--api-key {OPAQUE} --lr 1", OPAQUE),
    (f"--hf-token={OPAQUE}", OPAQUE),
    (f"MY_SECRET={OPAQUE} torchrun train.py", OPAQUE),
    (f"git clone https://{OPAQUE}@github.com/o/r", OPAQUE),
    (f"postgres://user:{OPAQUE}@db:5432/x", OPAQUE),
    (f"pushing with {GH}", GH),
    (f"token is {HF} ok", HF),
    (f"openai {OPENAI}", OPENAI),
    (f"aws {AWS} in log", AWS),
    (f"slack {SLACK}", SLACK),
    (f"jwt {JWT}", JWT),
    (f"Bearer {OPAQUE}", OPAQUE),
]

MUST_SURVIVE = [
    "0000:4F:00.0",
    "00000000:3B:00.0",
    "busId 18000 cudaDev 0",
    "GPU-5c8a4a2e-13c5-b2b8-2d3c-0c1f8a3b9f10",
    "MIG-9c2a8d4e-1f3b-5a6c-8d7e-0a1b2c3d4e5f",
    "MIG-GPU-5c8a4a2e-13c5-b2b8-2d3c-0c1f8a3b9f10/1/0",
    "/home/alice/.cache/huggingface/hub/models--gpt2",
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "SORT_KEY",
    "TOKENIZERS_PARALLELISM=false",
    "MAX_NEW_TOKENS=4096",
    "HF_TOKEN_PATH=/root/.cache/huggingface/token",
    "NCCL_IB_HCA=mlx5_0:1",
    "CUDA_VISIBLE_DEVICES=0,1,2,3",
    "MASTER_ADDR=10.0.0.1 MASTER_PORT=29500",
    "git@github.com:org/repo.git",
    "hf_transfer",
    "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970",
    "HF_TOKEN=null",
    "--api-key false",
]


@pytest.mark.parametrize(("text", "secret"), FORMS)
def test_every_form_is_masked(text: str, secret: str) -> None:
    out = redact_free_text(text)
    assert secret not in out
    assert REDACTED in out


@pytest.mark.parametrize("text", MUST_SURVIVE)
def test_what_the_diagnosis_needs_survives(text: str) -> None:
    assert redact_free_text(text) == text


@pytest.mark.parametrize("lead", ["A: ", "note = ", "--note ", "x=", "'k': "])
def test_a_harmless_key_does_not_hide_the_secret_after_it(lead: str) -> None:
    out = redact_free_text(f"{lead}X-Api-Key: {OPAQUE}")
    assert OPAQUE not in out and "X-Api-Key:" in out


def test_names_are_kept_values_go() -> None:
    out = redact_free_text(f"SORT_KEY={OPAQUE} X-Api-Key: {OPAQUE}")
    assert "SORT_KEY=" in out and "X-Api-Key:" in out and OPAQUE not in out


def test_hyphenated_and_underscored_names_alike() -> None:
    assert (
        is_secret_name("api-key") and is_secret_name("--hf-token") and is_secret_name("X-Api-Key")
    )
    assert not is_secret_name("TOKENIZERS_PARALLELISM")
    assert not is_secret_name("GIT_AUTHOR_NAME")


def test_structures_are_walked_not_reserialised() -> None:
    # A secret spelled like JSON syntax cannot break anything: nothing is re-parsed.
    doc = {"env": {"HF_TOKEN": 'a"b\\c{d', "N": 1}, "argv": ["--api-key", 'q"uote'], "x": None}
    out = scrub(doc, {'a"b\\c{d', 'q"uote'})
    assert out == {
        "env": {"HF_TOKEN": REDACTED, "N": 1},
        "argv": ["--api-key", REDACTED],
        "x": None,
    }
    json.dumps(out)


def _report(text: str) -> Report:
    f = finding("RM101", text, detail=text, fix=text, evidence=(text,))
    return Report(
        command="explain", findings=[f], sections={"notes": [text], "launch": {"c": text}}
    )


@settings(max_examples=60, deadline=None)
@given(
    form=st.sampled_from(FORMS),
    before=st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
    after=st.text(alphabet="abc =:,;\n\t{}[]\"'", max_size=30),
)
def test_planted_secret_never_leaves_a_report(
    form: tuple[str, str], before: str, after: str
) -> None:
    text, secret = form
    planted = f"{before} {text} {after}"
    report = redact_report(_report(planted))
    blob = json.dumps(report.to_dict()) + "".join(str(v) for v in report.sections.values())
    assert secret not in blob
