"""Secrets never leak: one redaction point for text and for structures, before anything leaves.

Two kinds of evidence make a value secret:

* its **name** looks like a credential (``HF_TOKEN``, ``--api-key``, ``X-Api-Key:``,
  ``"password": ...``), in any of the forms people write it: ``NAME=value``, ``NAME = value``,
  ``NAME: value``, ``"NAME": "value"``, ``--name value``, ``--name=value``;
* the **value itself** is a credential whatever its name: ``Authorization: Bearer ...``, URL
  userinfo (``https://user:pw@host``, ``https://TOKEN@host``), and the well-known token shapes of
  :data:`TOKEN_SHAPES` (GitHub, Hugging Face, OpenAI, AWS, Slack, GitLab, Google, Stripe, npm,
  JWTs, PEM private keys).

Structures are scrubbed by walking them (:func:`scrub`), never by rewriting serialised JSON, so
a secret spelled ``null`` or holding a quote cannot break a report. What must survive (PCI bus
ids, GPU/MIG UUIDs, paths, hashes, ordinary names such as ``SORT_KEY`` itself) is kept by
construction: no rule matches on hex or UUID shapes, and names are never removed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rankmap.findings import Report

REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIAL|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"_KEY$|^KEY$|AUTH(?!OR)|COOKIE|SESSION_?KEY|SESSION_?TOKEN|SIGNATURE|WEBHOOK|DSN$|"
    r"CONNECTION_STRING|BEARER)",
    re.IGNORECASE,
)
# Names that match the words above but hold no credential: counts, tokenizer switches, paths.
_NOT_SECRET_NAME = re.compile(
    r"(TOKENS\b|TOKENS_|TOKENIZER|_PATH$|_FILE$|_DIR$|_HOME$|_LEN$|_LENGTH$|^MAX_|^NUM_)",
    re.IGNORECASE,
)
# Values that carry nothing: JSON literals, empties and placeholders (`KEY=VALUE`, `xxx`).
_TRIVIAL_VALUES = frozenset(
    {"", "null", "none", "true", "false", "yes", "no", "0", "1", "value", "...", "xxx", "***",
     # the words of a sentence about a credential ("password: is not set"), not one
     "is", "not", "was", "are", "set", "unset", "empty", "missing", "required", "invalid", "the",
     "a", "an", "must", "should", "will", "has", "have", "needed", "optional", "expired"}
)  # fmt: skip

TOKEN_SHAPES: tuple[tuple[str, str], ...] = (
    # (what, regex). Lengths follow each vendor's documented format, with some slack.
    ("GitHub token", r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})\b"),
    ("Hugging Face token", r"\bhf_[A-Za-z0-9]{20,}\b"),
    ("OpenAI/Anthropic key", r"\bsk-(?:proj-|ant-|svcacct-)?[A-Za-z0-9_-]{16,}"),
    ("AWS access key id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("GitLab token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{30,}"),
    ("Stripe key", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("npm token", r"\bnpm_[A-Za-z0-9]{30,}\b"),
    ("JSON web token", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}"),
    (
        "PEM private key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]{0,8192}?-----END [A-Z ]*PRIVATE KEY-----",
    ),
)
_TOKENS = re.compile("|".join(f"(?:{rx})" for _, rx in TOKEN_SHAPES))

_URL_USERINFO = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]{0,20}://)[^/\s@\"'<>]{1,512}@")
_AUTH_HEADER = re.compile(
    r"(?P<head>\b(?:proxy-)?authorization\s*[:=]\s*[\"']?"
    r"(?:(?:bearer|basic|token|digest|negotiate|apikey)\s+)?)"
    r"(?P<value>[^\s\"',;]{1,4096})",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(?P<head>\bbearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{8,})", re.IGNORECASE)
_VALUE = r"(?P<value>\"[^\"\n]{0,4096}\"|'[^'\n]{0,4096}'|[^\s\"',;}\]]{1,4096})"
_NAME = r"(?P<name>[A-Za-z_][A-Za-z0-9_-]{0,128})"
# NAME=value, NAME = value, NAME: value, "NAME": "value", 'NAME': 'value'
# (on one line: an empty `HF_TOKEN=` does not take the next line's first word; a name inside a
# path, `/etc/passwd:`, is no key — review 19)
_KEYED = re.compile(
    r"(?<![\w/-])(?P<q>[\"']?)" + _NAME + r"(?P=q)(?P<sep>[ \t]{0,4}[=:][ \t]{0,4})(?!//)" + _VALUE
)
_FLAG = re.compile(
    r"(?<!\S)(?P<name>--?[A-Za-z][A-Za-z0-9_-]{0,128})(?P<sep>=|[ \t]+)(?!-)" + _VALUE
)


def is_secret_name(name: str) -> bool:
    """True when a variable, flag, header or key named ``name`` looks like it holds a
    credential (``-`` and ``_`` alike: ``api-key`` is ``API_KEY``)."""
    key = name.strip().lstrip("-").replace("-", "_")
    return bool(_SECRET_NAME.search(key)) and not _NOT_SECRET_NAME.search(key)


def is_trivial(value: str) -> bool:
    """Values that reveal nothing (``null``, ``false``, ``""``): kept to keep reports readable."""
    return value.strip().strip("\"'").lower() in _TRIVIAL_VALUES


def redact_value(name: str, value: str) -> str:
    """The value to show for ``name``: redacted when the name is secret, else free-text rules."""
    if is_secret_name(name) and not is_trivial(value):
        return REDACTED
    return redact_free_text(value)


def redact_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` safe to print."""
    return {k: redact_value(k, v) for k, v in env.items()}


def secret_values(env: Mapping[str, str], argv: Iterable[str] = ()) -> set[str]:
    """The values that must not appear anywhere: secret-named variables of ``env`` and
    secret-named ``--flag value`` / ``NAME=value`` arguments of ``argv``."""
    found = {v for k, v in env.items() if is_secret_name(k) and _worth_hiding(v)}
    args = list(argv)
    for text in [*env.values(), *args]:
        found |= secrets_in_text(text)
    for i, tok in enumerate(args):
        name, eq, value = tok.partition("=")
        if not is_secret_name(name):
            continue
        if eq and _worth_hiding(value):
            found.add(value)
        elif not eq and name.startswith("-") and i + 1 < len(args) and _worth_hiding(args[i + 1]):
            found.add(args[i + 1])
    return found


def secrets_in_text(text: str) -> set[str]:
    """The credential values :func:`redact_free_text` would mask in ``text``: once known, they
    are masked however a later step quotes them (``shlex.join`` of a launch, JSON escapes)."""
    found = {m.group(0) for m in _TOKENS.finditer(text)}
    found |= {m.group("value") for m in _AUTH_HEADER.finditer(text)}
    found |= {m.group("value") for m in _BEARER.finditer(text)}
    for rx in (_KEYED, _FLAG):
        for m in rx.finditer(text):
            if is_secret_name(m.group("name")) and not is_trivial(m.group("value")):
                found.add(m.group("value").strip("\"'"))
    for m in _URL_USERINFO.finditer(text):
        userinfo = m.group(0)[len(m.group("scheme")) : -1]
        user, colon, password = userinfo.partition(":")
        found.add(password if colon else user)  # user:password@ or a bare TOKEN@
    return {v for v in found if _worth_hiding(v) and v != REDACTED}


def _worth_hiding(value: str) -> bool:
    return len(value) >= 4 and not is_trivial(value)


def redact_text(text: str, env: Mapping[str, str]) -> str:
    """Free text with every value of a secret-looking variable of ``env`` replaced, then
    :func:`redact_free_text`."""
    return redact_free_text(_replace_values(text, secret_values(env)))


def _replace_values(text: str, secrets: Iterable[str]) -> str:
    for value in sorted(secrets, key=len, reverse=True):
        text = text.replace(value, REDACTED)
    return text


def redact_free_text(text: str) -> str:
    """Mask every credential form of the module docstring in ``text``."""
    if not text:
        return text
    text = _TOKENS.sub(REDACTED, text)
    text = _URL_USERINFO.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m.group('head')}{REDACTED}", text)
    text = _BEARER.sub(lambda m: f"{m.group('head')}{REDACTED}", text)
    text = _sub_overlapping(_KEYED, _keyed, text)
    return _sub_overlapping(_FLAG, _flag, text)


def _sub_overlapping(rx: re.Pattern[str], fn: Callable[[re.Match[str]], str], text: str) -> str:
    """``rx.sub(fn, text)``, except that a match ``fn`` keeps (a harmless ``A: X-Api-Key:``)
    does not swallow the secret key/value that starts inside its value: the search resumes at
    the match's separator."""
    out: list[str] = []
    done = start = 0
    while (m := rx.search(text, start)) is not None:
        shown = fn(m)
        if shown == m.group(0):
            start = m.start("sep") + 1
            continue
        out += [text[done : m.start()], shown]
        done = start = m.end()
    return "".join(out) + text[done:]


def _quoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return f"{value[0]}{REDACTED}{value[0]}"
    return REDACTED


def _keyed(m: re.Match[str]) -> str:
    value = m.group("value")
    if not is_secret_name(m.group("name")) or is_trivial(value) or value == REDACTED:
        return m.group(0)
    q = m.group("q")  # a quoted key ("api_key": "...") keeps the value's quotes: JSON stays JSON
    shown = _quoted(value) if q else REDACTED
    return f"{q}{m.group('name')}{q}{m.group('sep')}{shown}"


def _flag(m: re.Match[str]) -> str:
    value = m.group("value")
    if not is_secret_name(m.group("name")) or is_trivial(value) or value == REDACTED:
        return m.group(0)
    return f"{m.group('name')}{m.group('sep')}{REDACTED}"


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """``value`` (str, mapping, sequence, or anything else) with every string redacted:
    the exact ``secrets`` first, then :func:`redact_free_text`. Mapping keys are kept."""
    known = sorted({s for s in secrets if _worth_hiding(s)}, key=len, reverse=True)
    return _scrub(value, known)


def _scrub(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        return redact_free_text(_replace_values(value, secrets))
    if isinstance(value, Mapping):
        return {k: _scrub_item(k, v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v, secrets) for v in value]
    return value


def _scrub_item(key: Any, value: Any, secrets: list[str]) -> Any:
    if isinstance(key, str) and isinstance(value, str) and is_secret_name(key):
        return value if is_trivial(value) else REDACTED
    return _scrub(value, secrets)


def redact_report(report: Report, secrets: Iterable[str] = ()) -> Report:
    """``report`` with every finding and section string scrubbed (:func:`scrub`).

    Applied where reports leave rankmap (``emit``, ``run``, HTML): whatever a command quoted
    (log lines, launch commands, notes), credentials do not get out.
    """
    known = sorted({s for s in secrets if _worth_hiding(s)}, key=len, reverse=True)
    report.findings = [
        replace(
            f,
            title=_scrub(f.title, known),
            detail=_scrub(f.detail, known),
            fix=_scrub(f.fix, known),
            evidence=tuple(_scrub(e, known) for e in f.evidence),
        )
        for f in report.findings
    ]
    report.sections = _scrub(report.sections, known)
    return report
