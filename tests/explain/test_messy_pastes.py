"""The reader on logs as people paste them: markdown, quotes, CRLF, tabs, launcher prefixes,
JSON-escaped text and lines wrapped by a terminal. Ranks and bus id must survive every form."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files

TORCH = (
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1691, invalid usage (run with NCCL_DEBUG=WARN for details), "
    "NCCL version 2.19.3\n"
    "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\n"
    "Last error:\n"
    "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 4f000\n"
)
NCCL = (
    "node1:123:456 [0] init.cc:824 NCCL WARN Duplicate GPU detected : rank 3 and rank 0 both "
    "on CUDA device 4f000\n"
)
INIT = (
    "gpu-a:100:200 [0] NCCL INFO ncclCommInitRank comm 0x55d0 rank {r} nranks 2 cudaDev 0 "
    "nvmlDev 0 busId 4f000 commId 0x1d5bdcf1d0b5d5e5 - Init START\n"
)


def _each_line(prefix: str) -> Callable[[str], str]:
    return lambda text: "".join(prefix + line + "\n" for line in text.splitlines())


def _wrap(width: int) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        out = []
        for line in text.splitlines():
            out += [line[i : i + width] for i in range(0, len(line), width)]
        return "\n".join(out) + "\n"

    return wrap


FORMS: dict[str, Callable[[str], str]] = {
    "plain": lambda t: t,
    "fenced": lambda t: "```shell\n" + t + "```\n",
    "quoted": _each_line("> "),
    "quoted-twice": _each_line("> > "),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "tabs": _each_line("\t"),
    "srun-label": _each_line("3: "),
    "torchrun-tee": _each_line("[default0]:"),
    "mpirun-tag": _each_line("[1,0]<stdout>:"),
    "json-escaped": lambda t: json.dumps(t)[1:-1] + "\n",
    "json-field": lambda t: '{"log": ' + json.dumps(t) + "}\n",
    "lost-newlines": lambda t: t.replace("\n", " ") + "\n",
    "bom": lambda t: "\ufeff" + t,
    "nbsp": lambda t: t.replace(" ", "\u00a0"),
    "wrapped-80": _wrap(80),
    "wrapped-100": _wrap(100),
    "wrapped-quoted-80": lambda t: _each_line("> ")(_wrap(80)(t)),
}


def _explain(tmp_path: Path, text: str) -> tuple[list[int], list[str]]:
    path = tmp_path / "paste.log"
    path.write_bytes(text.encode("utf-8"))
    first = explain_files([path]).ordered_findings()[0]
    return list(first.ranks), list(first.devices)


@pytest.mark.parametrize("form", sorted(FORMS))
def test_torch_wrapped_duplicate(tmp_path: Path, form: str) -> None:
    assert _explain(tmp_path, FORMS[form](TORCH)) == ([0, 1], ["0000:4F:00.0"])


@pytest.mark.parametrize("form", sorted(FORMS))
def test_nccl_warn_duplicate(tmp_path: Path, form: str) -> None:
    assert _explain(tmp_path, FORMS[form](NCCL)) == ([0, 3], ["0000:4F:00.0"])


@pytest.mark.parametrize("width", [80, 100, 120])
def test_wrapped_init_lines_still_map_ranks(tmp_path: Path, width: int) -> None:
    text = _wrap(width)(INIT.format(r=0) + INIT.format(r=1))
    path = tmp_path / "init.log"
    path.write_text(text)
    report = explain_files([path])
    assert [p.rank for p in report.placements] == [0, 1]
    first = report.ordered_findings()[0]
    assert list(first.ranks) == [0, 1]
    assert list(first.devices) == ["0000:4F:00.0"]


def test_interleaved_ranks_keep_their_pairs(tmp_path: Path) -> None:
    """Lines of many ranks mixed: each WARN keeps its own pair; all pairs are reported."""
    lines = [
        f"[1,{r}]<stdout>:node1:{100 + r}:{200 + r} [0] init.cc:824 NCCL WARN Duplicate GPU "
        f"detected : rank {r} and rank {r - 4} both on CUDA device {bus}\n"
        for r, bus in ((4, "4f000"), (5, "52000"), (6, "56000"), (7, "57000"))
    ]
    noise = [
        f"[1,{r}]<stdout>:node1:{100 + r}:{200 + r} [0] NCCL INFO init.cc:1358 -> 5\n"
        for r in range(8)
    ]
    mixed = [x for pair in zip(noise, lines + lines, strict=False) for x in pair]
    path = tmp_path / "mixed.log"
    path.write_text("".join(mixed))
    first = explain_files([path]).ordered_findings()[0]
    assert list(first.ranks) == [0, 1, 2, 3, 4, 5, 6, 7]
    assert list(first.devices) == ["0000:4F:00.0", "0000:52:00.0", "0000:56:00.0", "0000:57:00.0"]


def test_a_complete_line_is_not_glued_to_its_neighbour(tmp_path: Path) -> None:
    """Joining only happens when neither half is recognised alone."""
    text = "Last error:\n" + NCCL + "RuntimeError: CUDA error: invalid device ordinal\n"
    path = tmp_path / "two.log"
    path.write_text(text)
    report = explain_files([path])
    events = report.sections["explain"]["events"]
    assert events["duplicate_gpu"] == 1
    assert events["invalid_ordinal"] == 1
