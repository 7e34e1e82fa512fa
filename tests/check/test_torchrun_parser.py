"""Our torchrun argument parsing agrees with torch's own parser (skipped without torch)."""

from __future__ import annotations

import pytest

from rankmap.launchers.torchrun import parse_torchrun_args

ARGVS = [
    ["--nproc_per_node", "8", "train.py"],
    ["--nproc-per-node=4", "--nnodes", "2", "--node-rank", "1", "train.py", "--lr", "0.1"],
    [
        "--nnodes=1:4",
        "--rdzv-backend",
        "c10d",
        "--rdzv_endpoint",
        "host:29400",
        "--nproc_per_node",
        "gpu",
        "t.py",
    ],
    ["--standalone", "--nproc-per-node", "auto", "train.py", "--local_rank", "3"],
    ["-m", "--nproc_per_node", "2", "pkg.train", "--x"],
    ["--no-python", "--nproc_per_node", "2", "bash", "run.sh"],
    ["--master-addr", "10.0.0.1", "--master_port=29501", "--node_rank=0", "--nnodes=2", "train.py"],
    ["--virtual-local-rank", "--nproc-per-node", "4", "--local-ranks-filter", "0", "train.py"],
    [
        "--max-restarts",
        "3",
        "--rdzv-id",
        "job",
        "--rdzv-conf",
        "timeout=60",
        "-r",
        "3",
        "-t",
        "3",
        "train.py",
    ],
]


@pytest.mark.parametrize("argv", ARGVS, ids=[" ".join(a) for a in ARGVS])
def test_matches_torch_parser(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    run = pytest.importorskip("torch.distributed.run")
    for key in list(__import__("os").environ):
        if key.startswith("PET_"):
            monkeypatch.delenv(key)
    theirs = run.get_args_parser().parse_args(argv)
    ours = parse_torchrun_args(argv, {})
    assert ours.nnodes == theirs.nnodes
    assert ours.nproc_per_node == theirs.nproc_per_node
    assert (ours.node_rank if ours.node_rank is not None else 0) == int(theirs.node_rank)
    assert ours.rdzv_backend == theirs.rdzv_backend
    assert ours.standalone == theirs.standalone
    assert ours.module == theirs.module
    assert ours.no_python == theirs.no_python
    assert ours.virtual_local_rank == theirs.virtual_local_rank
    assert ours.script == theirs.training_script
    assert list(ours.script_args) == list(theirs.training_script_args)


def test_pet_env_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    run = pytest.importorskip("torch.distributed.run")
    monkeypatch.setenv("PET_NPROC_PER_NODE", "4")
    monkeypatch.setenv("PET_NNODES", "2")
    theirs = run.get_args_parser().parse_args(["train.py"])
    ours = parse_torchrun_args(["train.py"], {"PET_NPROC_PER_NODE": "4", "PET_NNODES": "2"})
    assert (
        (ours.nproc_per_node, ours.nnodes) == (theirs.nproc_per_node, theirs.nnodes) == ("4", "2")
    )


def test_abbreviation_rejected_like_torch() -> None:
    run = pytest.importorskip("torch.distributed.run")
    from rankmap.errors import UsageError

    with pytest.raises(SystemExit):
        run.get_args_parser().parse_args(["--nproc", "8", "train.py"])
    with pytest.raises(UsageError):
        parse_torchrun_args(["--nproc", "8", "train.py"], {})
