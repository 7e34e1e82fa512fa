"""Review 19: redaction that ate words next to a credential's name."""

from __future__ import annotations

import pytest

from rankmap.redact import REDACTED, redact_free_text


@pytest.mark.parametrize(
    "text",
    [
        "HF_TOKEN=\nTraceback (most recent call last):",
        "password: is not set",
        "/etc/passwd: not a machine description",
        "--hub-token\nTraceback (most recent call last):",
    ],
)
def test_words_around_an_empty_or_named_credential_are_kept(text: str) -> None:
    assert redact_free_text(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("HF_TOKEN=hf_abcdefghijklmnopqrstu", "HF_TOKEN="),
        ("password: hunter22secret", "password: "),
        ("--hub-token abcdef123456", "--hub-token "),
    ],
)
def test_a_credential_on_its_line_is_still_hidden(text: str, kept: str) -> None:
    assert redact_free_text(text) == kept + REDACTED
