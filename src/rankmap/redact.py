"""Secrets never leak: environment values whose names look like credentials are redacted."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rankmap.findings import Report

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


# ``HF_TOKEN=abc`` / ``--hf_token abc`` / ``--api-key=abc`` inside free text (log lines quoted as
# evidence, launch commands, notes): the value goes, the name stays.
_ASSIGNMENT = re.compile(
    r"(?<![\w-])(?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\"[^\"]*\"|'[^']*'|[^\s\"',;]+)"
)
_FLAG = re.compile(
    r"(?<!\S)(?P<name>--?[A-Za-z][A-Za-z0-9_-]*)(?P<sep>=|\s+)(?!-)"
    r"(?P<value>\"[^\"]*\"|'[^']*'|[^\s\"']+)"
)


def redact_free_text(text: str) -> str:
    """Mask credential-looking ``NAME=value``, ``--secret-flag value`` and URL passwords."""
    if not text:
        return text

    def assignment(m: re.Match[str]) -> str:
        return f"{m.group('name')}={REDACTED}" if is_secret_name(m.group("name")) else m.group(0)

    def flag(m: re.Match[str]) -> str:
        key = m.group("name").lstrip("-").replace("-", "_")
        if not is_secret_name(key):
            return m.group(0)
        return f"{m.group('name')}{m.group('sep')}{REDACTED}"

    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    return _FLAG.sub(flag, _ASSIGNMENT.sub(assignment, text))


def redact_report(report: Report) -> Report:
    """``report`` with :func:`redact_free_text` applied to every finding and section string.

    The last line of defence, applied where reports leave rankmap (``emit``, ``run``): whatever
    a command quoted (log lines, launch commands, notes), credentials do not get out.
    """
    report.findings = [
        replace(
            f,
            title=redact_free_text(f.title),
            detail=redact_free_text(f.detail),
            fix=redact_free_text(f.fix),
            evidence=tuple(redact_free_text(e) for e in f.evidence),
        )
        for f in report.findings
    ]
    report.sections = _scrub(report.sections)
    return report


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return redact_free_text(value)
    if isinstance(value, dict):
        return {k: _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value
