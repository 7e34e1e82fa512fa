"""bench: sizes that cannot be measured are usage errors, not internal errors or empty tables."""

from __future__ import annotations

import pytest
from qa_helpers import assert_one_line_error

pytest.importorskip("torch")


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))


@pytest.mark.torch
def test_size_too_big_for_memory(run_proc):
    res = run_proc(
        ["bench", "-b", "64G", "-e", "64G", "-n", "1", "-w", "0"],
        timeout=120,
        preexec_fn=_limit_memory,
    )
    assert_one_line_error(res.returncode, res.stderr)
    assert "64G" in res.stderr or "68719476736" in res.stderr


@pytest.mark.torch
@pytest.mark.parametrize("as_json", [False, True], ids=["text", "json"])
def test_sizes_below_one_element(run_proc, as_json: bool):
    argv = ["bench", "-b", "1", "-e", "4", "-n", "1", "-w", "0", "--dtype", "float64"]
    res = run_proc(argv + (["--json"] if as_json else []), timeout=120)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith(("rankmap: error:", "hint:"))
    assert "float64" in res.stderr
