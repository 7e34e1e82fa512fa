"""Fuzz every parser of untrusted input and count the crashes (issue 11: 0 in 2,000 each).

    PYTHONPATH=src python benchmarks/fuzz_parsers.py [--examples 2000] [--only NAME] [--show]

Targets and strategies live in tests/fuzz/fuzz_targets.py (the suite runs a small profile of
the same targets). A crash is an exception other than rankmap's own RankMapError, or an example
slower than --slow seconds. Prints one line per parser: examples, crashes, distinct crashes
(exception type + innermost rankmap frame), the slowest example; --show prints one input each.
"""

from __future__ import annotations

import argparse
import sys
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings

sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "fuzz"))
import fuzz_targets  # noqa: E402


def where(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "rankmap" in f.filename]
    f = frames[-1] if frames else traceback.extract_tb(exc.__traceback__)[-1]
    return f"{type(exc).__name__} at {Path(f.filename).name}:{f.lineno}"


def fuzz(
    target: fuzz_targets.Target, examples: int, slow: float
) -> tuple[int, dict[str, tuple[int, str]], float]:
    crashes: dict[str, tuple[int, str]] = {}
    seen = [0, 0.0]

    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(target.strategy)
    def run(value: object) -> None:
        seen[0] += 1
        start = time.perf_counter()
        try:
            target.run(value)
        except Exception as exc:  # noqa: BLE001 - counted, not raised
            if not fuzz_targets.allowed(exc):
                key = where(exc)
                count, sample = crashes.get(key, (0, repr(value)[:300]))
                crashes[key] = (count + 1, sample)
        took = time.perf_counter() - start
        seen[1] = max(seen[1], took)
        if took > slow:
            count, sample = crashes.get("slow", (0, repr(value)[:300]))
            crashes["slow"] = (count + 1, sample)

    run()
    return int(seen[0]), crashes, float(seen[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--slow", type=float, default=2.0, help="seconds per example (crash above)")
    parser.add_argument("--show", action="store_true")
    args = parser.parse_args()
    total = 0
    print(f"{'parser':24} {'examples':>8} {'crashes':>7} {'distinct':>8} {'slowest':>8}")
    for target in fuzz_targets.targets():
        if args.only and target.name not in args.only:
            continue
        n, crashes, slowest = fuzz(target, args.examples, args.slow)
        count = sum(c for c, _ in crashes.values())
        total += count
        print(f"{target.name:24} {n:8d} {count:7d} {len(crashes):8d} {slowest:7.3f}s", flush=True)
        for key, (c, sample) in sorted(crashes.items()):
            print(f"    {c:5d} x {key}" + (f"\n          e.g. {sample}" if args.show else ""))
    print(f"total crashes: {total}")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
