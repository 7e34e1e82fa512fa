"""Session 17: shapes written here, restating review and b23 dev findings in our own words."""

from __future__ import annotations

import pytest
from paste_findings import findings_of

from rankmap.explain.docread import read_document


def _lead(text: str) -> tuple[str, str]:
    first = findings_of(text)[0]
    return first.category, first.severity.value


# --- every process on every GPU ---------------------------------------------------------------


@pytest.mark.parametrize(
    "sentence",
    [
        "Each worker apparently grabs both GPUs.",
        "every process allocates memory on all GPUs",
        "Each rank is using all 4 GPUs at the same time.",
    ],
)
def test_each_process_taking_every_gpu_is_read(sentence: str) -> None:
    assert "procs-on-every-gpu" in read_document(sentence + "\n").hits


@pytest.mark.parametrize(
    "sentence",
    [
        # every launcher's process sees all GPUs before it selects one: no symptom
        "Each process sees all GPUs, so we call set_device(local_rank).",
        "Each model uses all of the GPUs through tensor parallelism.",
        "Each process runs on all 8 GPUs, one each.",
    ],
)
def test_seeing_every_gpu_or_a_model_on_every_gpu_is_no_symptom(sentence: str) -> None:
    assert "procs-on-every-gpu" not in read_document(sentence + "\n").hits


def _table(rows: list[tuple[int, int]]) -> str:
    return "".join(
        f"|    {gpu}   N/A  N/A     {pid}      C   python                           3000MiB |\n"
        for gpu, pid in rows
    )


def test_a_process_table_of_ranks_each_on_every_gpu_is_no_device_selection() -> None:
    rows = [(gpu, pid) for pid in (501, 502, 503) for gpu in (0, 1, 2)]
    text = "TF workers on one host run out of memory\n\n" + _table(rows)
    facts = read_document(text)
    assert facts.every_gpu == "3 processes each hold memory on every GPU (0, 1, 2)"
    found = findings_of(text)
    assert found[0].category == "no_set_device"
    assert "each hold memory on every GPU" in found[0].detail


def test_one_process_on_every_gpu_is_one_rank_using_them_by_design() -> None:
    text = "DataParallel run\n\n" + _table([(0, 501), (1, 501), (2, 501)])
    assert read_document(text).every_gpu is None


def test_ranks_each_on_their_own_gpu_are_not_on_every_gpu() -> None:
    text = "DDP run\n\n" + _table([(0, 501), (1, 502), (2, 503)])
    assert read_document(text).every_gpu is None


# --- a wrapper that gives each rank its own GPU ------------------------------------------------


def test_a_wrapper_giving_each_rank_one_gpu_leads_to_per_process_lists() -> None:
    text = (
        "Horovod: IndexError on every rank except 0\n\n"
        "Our site wrapper sets CUDA_VISIBLE_DEVICES to a single GPU for each MPI rank.\n\n"
        "    gpus = tf.config.list_physical_devices('GPU')\n"
        "    tf.config.set_visible_devices(gpus[hvd.local_rank()], 'GPU')\n\n"
        "IndexError: list index out of range\n"
        "Invalid device ordinal value (1). Valid range is [0, 0]\n"
    )
    assert _lead(text)[0] == "per_process_visible_devices"


def test_one_list_for_every_run_is_no_per_process_list() -> None:
    assert (
        "one-gpu-per-proc"
        not in read_document("I set CUDA_VISIBLE_DEVICES=0,1 for each run\n").hits
    )
