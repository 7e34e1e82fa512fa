"""Properties of the simulation over many CUDA_VISIBLE_DEVICES / process-count combinations."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.adapters.local import check_launch
from rankmap.inventory import load_machine
from rankmap.pci import nccl_form

DATA = Path(__file__).parents[1] / "data" / "check"
HOST = load_machine("dgx-h100")


@settings(max_examples=60, deadline=None)
@given(
    cvd=st.lists(st.integers(0, 7), min_size=1, max_size=8, unique=True),
    nproc=st.integers(1, 16),
)
def test_modulo_wraps_exactly_like_nccl_sees_it(cvd: list[int], nproc: int) -> None:
    env = {"CUDA_VISIBLE_DEVICES": ",".join(map(str, cvd))}
    report = check_launch(
        ["torchrun", "--nproc-per-node", str(nproc), "train_modulo.py"],
        machines=HOST,
        env=env,
        cwd=DATA,
    )
    gpus = HOST[0].gpus
    for p in report.placements:
        expected = gpus[cvd[p.rank % len(cvd)]]
        assert p.nvml_index == expected.nvml_index
        assert p.pci_bus_id == expected.pci_bus_id
    dup_lines = [x for x in report.sections["predicted_errors"] if x.startswith("Duplicate GPU")]
    if nproc <= len(cvd):
        assert not report.has_errors
        assert dup_lines == []
    else:
        assert report.has_errors
        # every rank that shares a GPU reports its lowest-numbered peer (NCCL's loop order)
        sharing = [
            r for r in range(nproc) if nproc > len(cvd) and (r >= len(cvd) or r + len(cvd) < nproc)
        ]
        assert len(dup_lines) == len(sharing)
        for r in sharing:
            peer = r % len(cvd) if r >= len(cvd) else r + len(cvd)
            bus = nccl_form(gpus[cvd[r % len(cvd)]].pci_bus_id or "")
            assert (
                f"Duplicate GPU detected : rank {r} and rank {peer} both on CUDA device {bus}"
                in dup_lines
            )


@settings(max_examples=40, deadline=None)
@given(nodes=st.integers(1, 6), nproc=st.integers(1, 10))
def test_local_rank_selection_ordinal_iff_too_many(nodes: int, nproc: int) -> None:
    report = check_launch(
        ["torchrun", "--nnodes", str(nodes), "--nproc-per-node", str(nproc), "train_local.py"],
        machines=load_machine("workstation-4gpu"),
        env={},
        nodes=nodes,
        cwd=DATA,
    )
    assert len(report.placements) == nodes * nproc
    failing = sorted(p.rank for p in report.placements if p.error)
    assert failing == [n * nproc + lr for n in range(nodes) for lr in range(4, nproc)]
    assert report.has_errors == (nproc > 4)
    assert len({p.node for p in report.placements}) == nodes
