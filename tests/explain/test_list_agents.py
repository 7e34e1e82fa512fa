"""A visible-devices list, or a report that a process uses the wrong GPU, in a job whose processes
get their list from a framework or a scheduler (dask-cuda, jax.distributed, Slurm's per-task
binding, Ray) leans to per_process_visible_devices; a list the user set in the launch stays
visible_devices_mismatch."""

from __future__ import annotations

import pytest
from paste_findings import alarms_of, findings_of

ORDINAL = "RuntimeError: CUDA error: invalid device ordinal\n"

AGENT_PASTES = {
    "dask-cuda": "from dask_cuda import LocalCUDACluster\ncluster = LocalCUDACluster()\n\n"
    "Each worker prints its CUDA_VISIBLE_DEVICES and then fails:\n" + ORDINAL,
    "jax": "jax.distributed.initialize(local_device_ids=[0])\n\n"
    "Every process logs CUDA_VISIBLE_DEVICES before the error:\n" + ORDINAL,
    "ray-prose": "# Ray Train: workers use the wrong GPU\n\nWith Ray Train workers on one node, the "
    "second worker puts its model on the wrong GPU and training fails.\n",
}


@pytest.mark.parametrize("name", sorted(AGENT_PASTES))
def test_a_list_next_to_a_per_process_agent_leans_to_per_process(name: str) -> None:
    first = findings_of(AGENT_PASTES[name])[0]
    assert first.category == "per_process_visible_devices", first.title
    assert "get their list from" in first.detail


def test_a_list_the_user_set_without_an_agent_stays_a_visible_devices_mismatch() -> None:
    first = findings_of("Running with CUDA_VISIBLE_DEVICES=0,1 python train.py\n" + ORDINAL)[0]
    assert first.category == "visible_devices_mismatch"
    assert "get their list from" not in first.detail


def test_mpirun_is_no_list_agent() -> None:
    # mpirun sets no visible-devices list (reference/launchers.md §6)
    text = "mpirun -np 2 --map-by ppr:2:node python train.py\nCUDA_VISIBLE_DEVICES=0,1\n" + ORDINAL
    assert all("get their list from" not in f.detail for f in findings_of(text))


def test_an_agent_and_a_list_without_a_failure_make_no_alarm() -> None:
    # a question about the setting: two settings are context, not evidence of a failure
    text = (
        "# Problem with LocalCUDACluster workers\n\n"
        "We start LocalCUDACluster(CUDA_VISIBLE_DEVICES='1,2') from dask_cuda and print the "
        "device count and current device in each worker:\n"
        "```\nworker sees 2 GPUs, current device 0\nworker sees 2 GPUs, current device 0\n```\n"
        "The docs say each worker gets its own CUDA_VISIBLE_DEVICES. Is one GPU visible per "
        "worker?\n"
    )
    assert not alarms_of(text)
