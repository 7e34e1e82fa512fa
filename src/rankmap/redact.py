"""Secrets never leak: environment values whose names look like credentials are redacted."""

from __future__ import annotations

import re
from collections.abc import Mapping

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"_KEY$|^KEY$|AUTH|COOKIE|SESSION|SIGNATURE|WEBHOOK|DSN$|CONNECTION_STRING)",
    re.IGNORECASE,
)
# Values that carry credentials whatever the name: URLs with user:password@, bearer tokens.
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+:[^/\s@]+@")


def is_secret_name(name: str) -> bool:
    """True when an environment variable's name looks like it holds a credential."""
    return bool(_SECRET_NAME.search(name))


def redact_value(name: str, value: str) -> str:
    """The value to show for ``name``: redacted when secret, URL passwords masked otherwise."""
    if is_secret_name(name):
        return REDACTED
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` safe to print."""
    return {k: redact_value(k, v) for k, v in env.items()}


def redact_text(text: str, env: Mapping[str, str]) -> str:
    """Replace, in free text, every value of a secret-looking variable of ``env``."""
    for name, value in env.items():
        if value and len(value) >= 4 and is_secret_name(name):
            text = text.replace(value, REDACTED)
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
