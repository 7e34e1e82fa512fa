"""Every parser of untrusted input, fuzzed: rankmap's own error or a result, never a crash.

A small profile (60 examples per parser, no example database) of the targets in
fuzz_targets.py; ``benchmarks/fuzz_parsers.py`` runs 2,000 per parser for the figure.
"""

from __future__ import annotations

import time

import pytest
from fuzz_targets import Target, allowed, targets
from hypothesis import HealthCheck, given, settings

EXAMPLES = 60
SECONDS_PER_EXAMPLE = 20.0  # catches hangs; not a speed target (2-core box shared with others)

TARGETS = {t.name: t for t in targets()}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_parser_never_crashes(name: str) -> None:
    target: Target = TARGETS[name]

    @settings(max_examples=EXAMPLES, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(target.strategy)
    def run(value: object) -> None:
        start = time.perf_counter()
        try:
            target.run(value)
        except Exception as exc:
            if not allowed(exc):
                raise
        took = time.perf_counter() - start
        assert took < SECONDS_PER_EXAMPLE, f"{name}: {took:.1f} s for one example"

    run()


def test_every_parser_family_is_fuzzed() -> None:
    families = {name.split(":")[0] for name in TARGETS}
    assert families >= {
        "launch", "check", "visibility", "envspec", "explain", "inventory", "topology", "probe"
    }  # fmt: skip
