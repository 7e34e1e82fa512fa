"""Score `rankmap check` on a folder of real public training scripts against the committed labels.

Run: PYTHONPATH=src python benchmarks/check_corpus.py CORPUS [--manifest TSV] [--split dev|test|all]
     [--verbose]

CORPUS holds ``repos/<id>/<path>`` (each script extracted from ``repo@commit`` with the modules
it imports); the labels are ``benchmarks/corpora/check_scripts.tsv`` (id, repo, commit, path,
launch, framework, selection, one_node, two_nodes, expected, evidence, split). For every script
the README launch runs through ``check_launch`` on the 8-GPU ``dgx-h100`` profile, once on one
node and once on two (the same command with ``--nnodes 2`` / ``-N 2`` / ``--num_nodes 2``).

Scored per split and node count:
- false error: the placement is labelled right and check reports an error;
- miss: the placement is labelled wrong and check reports no error;
- unchecked: check could not simulate the command (exit 2: a launcher it does not model).
Launchers check does not model are mapped to the launcher they run underneath (table
``_UNDERNEATH``, each with its reason); such rows are marked in the verbose output.
Tune on ``dev`` only; the ``test`` ids (benchmarks/corpora/check_test_ids.txt) are frozen.
"""

from __future__ import annotations

import argparse
import csv
import re
import shlex
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from rankmap.adapters.local import check_launch
from rankmap.errors import RankMapError
from rankmap.inventory import load_machine

MANIFEST = Path(__file__).parent / "corpora" / "check_scripts.tsv"
PROFILE = "dgx-h100"

# launchers check does not model -> the launcher they run underneath (and why that is faithful)
_UNDERNEATH: dict[str, tuple[str, str]] = {
    "horovodrun": ("mpirun", "horovodrun -np N -H host:N runs mpirun (or gloo) with N slots"),
    "composer": ("torchrun", "composer -n N starts N local processes with the torchrun env"),
    "fabric": ("torchrun", "fabric run starts one process per device with LOCAL_RANK set"),
    "tune": ("torchrun", "tune run wraps torchrun"),
    "colossalai": ("torchrun", "colossalai run wraps torchrun"),
    "litgpt": ("python", "litgpt starts Lightning, which launches its own processes"),
    "fairseq-train": ("python", "fairseq-train spawns one process per visible GPU itself"),
}


@dataclass(frozen=True)
class Row:
    id: str
    path: str
    launch: str
    one_node: str
    two_nodes: str
    expected: str
    split: str


@dataclass(frozen=True)
class Outcome:
    row: Row
    nodes: int
    errors: tuple[str, ...]  # error codes
    others: tuple[str, ...]  # warning/info codes
    selection: str
    unchecked: str | None  # why the command could not be simulated
    mapped: str | None  # the _UNDERNEATH reason, when used

    @property
    def label(self) -> str:
        return self.row.one_node if self.nodes == 1 else self.row.two_nodes

    @property
    def false_error(self) -> bool:
        return self.unchecked is None and self.label == "right" and bool(self.errors)

    @property
    def miss(self) -> bool:
        return self.unchecked is None and self.label == "wrong" and not self.errors


def read_rows(path: Path) -> list[Row]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return [
        Row(
            r["id"],
            r["path"],
            r["launch"],
            r["one_node"],
            r["two_nodes"],
            r["expected"],
            r["split"],
        )
        for r in rows
    ]


def command(row: Row, nodes: int) -> tuple[list[str], dict[str, str], str | None, Path]:
    """(argv, env prefix, the _UNDERNEATH reason, subdirectory) of the README launch on ``nodes``."""
    text = row.launch
    sub = Path(".")
    cd = re.match(r"^cd (\S+) && (.*)$", text)
    if cd:
        sub, text = Path(cd.group(1)), cd.group(2)
    argv = shlex.split(text)
    env: dict[str, str] = {}
    while argv and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", argv[0]):
        k, _, v = argv.pop(0).partition("=")
        env[k] = v
    mapped = None
    if argv and argv[0] in _UNDERNEATH:
        under, mapped = _UNDERNEATH[argv[0]]
        argv = _map_launcher(argv, under, row)
    return _on_nodes(argv, nodes), env, mapped, sub


def _map_launcher(argv: list[str], under: str, row: Row) -> list[str]:
    count = "8"
    for i, a in enumerate(argv):
        if a in ("-np", "-n", "--nproc_per_node", "--nproc-per-node", "--devices") and i + 1 < len(
            argv
        ):
            count = argv[i + 1]
        elif a.startswith(("--devices=", "--nproc_per_node=")):
            count = a.split("=", 1)[1]
    if under == "mpirun":
        return ["mpirun", "-np", count, "python", row.path]
    if under == "torchrun":
        return ["torchrun", "--nproc-per-node", count, row.path]
    return ["python", row.path]


def _on_nodes(argv: list[str], nodes: int) -> list[str]:
    if nodes == 1:
        return argv
    out: list[str] = []
    skip = False
    for i, a in enumerate(argv):
        if skip:
            skip = False
            continue
        if a == "--standalone":
            continue
        if a in ("--nnodes", "--num_nodes", "--num-nodes", "-N") and i + 1 < len(argv):
            skip = True
            continue
        if re.match(r"^--(nnodes|num_nodes|num-nodes)=", a):
            continue
        out.append(a)
    head = out[0] if out else ""
    if (
        head == "torchrun"
        or out[1:3] == ["-m", "torch.distributed.launch"]
        or out[1:3]
        == [
            "-m",
            "torch.distributed.run",
        ]
    ):
        at = 1 if head == "torchrun" else 3
        return [*out[:at], "--nnodes", str(nodes), *out[at:]]
    if head == "deepspeed":
        return [head, "--num_nodes", str(nodes), *out[1:]]
    if head in ("srun", "sbatch"):
        inner = _inner_launcher_at(out)
        rest = out[1:] if inner is None else [*out[1:inner], *_on_nodes(out[inner:], nodes)]
        return [head, "-N", str(nodes), *rest]
    if head in ("mpirun", "mpiexec"):
        return [head, "--npernode", _np(out), *_np_scaled(out[1:], nodes)]
    if out[:2] == ["accelerate", "launch"]:
        return [*out[:2], "--num_machines", str(nodes), *_accelerate_scaled(out[2:], nodes)]
    return out  # python / accelerate: the same command on every node


def _inner_launcher_at(argv: list[str]) -> int | None:
    """Where srun's command is itself a launcher (torchrun, python -m torch.distributed.run)."""
    for i, a in enumerate(argv[1:], start=1):
        if a == "torchrun":
            return i
        if a.startswith("python") and argv[i + 1 : i + 2] == ["-m"]:
            if argv[i + 2 : i + 3] in (["torch.distributed.run"], ["torch.distributed.launch"]):
                return i
            return None
        if not a.startswith("-") and "=" not in a and not argv[i - 1].startswith("-"):
            return None  # srun's program is something else
    return None


def _accelerate_scaled(rest: list[str], nodes: int) -> list[str]:
    out = list(rest)
    for i, a in enumerate(out):
        if (
            a in ("--num_processes", "--num-processes")
            and i + 1 < len(out)
            and out[i + 1].isdigit()
        ):
            out[i + 1] = str(int(out[i + 1]) * nodes)
    return out


def _np(argv: list[str]) -> str:
    for i, a in enumerate(argv):
        if a in ("-np", "-n") and i + 1 < len(argv):
            return argv[i + 1]
    return "8"


def _np_scaled(rest: list[str], nodes: int) -> list[str]:
    out = list(rest)
    for i, a in enumerate(out):
        if a in ("-np", "-n") and i + 1 < len(out) and out[i + 1].isdigit():
            out[i + 1] = str(int(out[i + 1]) * nodes)
    return out


def run_one(row: Row, corpus: Path, nodes: int) -> Outcome:
    repo = corpus / "repos" / row.id
    argv, env, mapped, sub = command(row, nodes)
    script = repo / row.path
    try:
        report = check_launch(
            argv,
            machines=load_machine(PROFILE),
            env=env,
            script=script if script.is_file() else None,
            nodes=nodes,
            cwd=repo / sub,
        )
    except RankMapError as exc:
        return Outcome(row, nodes, (), (), "-", str(exc).splitlines()[0][:120], mapped)
    errors = tuple(f.code for f in report.findings if f.severity.value == "error")
    others = tuple(f.code for f in report.findings if f.severity.value != "error")
    sel = str(report.sections.get("launch", {}).get("device_selection"))
    return Outcome(row, nodes, errors, others, sel, None, mapped)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument(
        "--manifest",
        type=Path,
        action="append",
        help="label files (default: every benchmarks/corpora/check_scripts*.tsv)",
    )
    ap.add_argument("--split", choices=("dev", "test", "all"), default="dev")
    ap.add_argument("--verbose", "-v", action="store_true")
    args = ap.parse_args(argv)
    manifests = args.manifest or sorted(MANIFEST.parent.glob("check_scripts*.tsv"))
    rows = [r for m in manifests for r in read_rows(m) if args.split in ("all", r.split)]
    outcomes = [run_one(r, args.corpus, n) for r in rows for n in (1, 2)]
    by_split: dict[str, Counter[str]] = defaultdict(Counter)
    for o in outcomes:
        c = by_split[o.row.split]
        c[f"{o.nodes}n scripts"] += 1
        c[f"{o.nodes}n labelled wrong"] += o.label == "wrong"
        c[f"{o.nodes}n false errors"] += o.false_error
        c[f"{o.nodes}n misses"] += o.miss
        c[f"{o.nodes}n unchecked"] += o.unchecked is not None
        if args.verbose or o.false_error or o.miss or o.unchecked:
            mark = (
                "FALSE-ERROR"
                if o.false_error
                else "MISS"
                if o.miss
                else ("UNCHECKED" if o.unchecked else "ok")
            )
            how = (
                o.unchecked
                or f"{o.selection} errors={','.join(o.errors) or '-'} other={','.join(o.others) or '-'}"
            )
            via = " (launcher mapped)" if o.mapped else ""
            print(
                f"{mark:11} {o.row.split:4} {o.nodes}n {o.row.id:34} label={o.label:5} {how}{via}"
            )
    for split, c in sorted(by_split.items()):
        figures = ", ".join(f"{k}={v}" for k, v in sorted(c.items()))
        print(f"[{split}] {figures}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
