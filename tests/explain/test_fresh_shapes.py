"""Short reports of each cause, in shapes written for these tests: a sentence or two, as people
first describe a failure. The context that decides each one is a fact of shared/reference/."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.explain.docread import read_document
from rankmap.findings import Severity


def _first_category(text: str) -> str:
    first = explain_files([Path("-")], stdin=io.StringIO(text)).ordered_findings()[0]
    return first.category if first.severity is not Severity.INFO else "info"


@pytest.mark.parametrize(
    ("category", "report"),
    [
        (
            "per_process_visible_devices",  # launchers.md §8: Ray narrows each worker's list
            "Inside a Ray actor with num_gpus=1, torch.cuda.device_count() returns 1 so cuda:1 "
            "fails with invalid device ordinal",
        ),
        (
            "container_mapping",  # cuda_devices.md §4: the pod sees more GPUs than it asked for
            "In our Kubernetes pod with nvidia.com/gpu: 2, nvidia-smi shows all 8 GPUs of the "
            "node and two pods collide on GPU 0",
        ),
        (
            "host_identity",  # nccl.md (b): one hostname everywhere makes one host
            'Both containers on different hosts report hostname "localhost", NCCL thinks they '
            "are on the same node and fails with cudaIpcOpenMemHandle invalid argument",
        ),
        (
            "visible_devices_mismatch",  # cuda_devices.md §1-2: CUDA renumbers from 0
            "The GPU index printed by torch.cuda.current_device() is 0 but nvidia-smi shows my "
            "job on GPU 3",
        ),
    ],
)
def test_a_short_report_is_read_by_its_deciding_fact(category: str, report: str) -> None:
    assert _first_category(report + "\n") == category


def test_a_launch_flag_is_no_accelerate_config_key() -> None:
    # launchers.md §3: `num_processes:` in a config file; `--num_processes` is the launch flag
    hits = read_document("$ accelerate launch --num_processes 8 train.py\n").hits
    assert "accelerate-config" not in hits
    assert "accelerate-config" in read_document("num_processes: 8\ngpu_ids: 0,1\n").hits


@pytest.mark.parametrize(
    "sentence",
    [
        "the scheduler thinks both tasks are on the same node",
        "NCCL treated the two machines as the same host",
    ],
)
def test_hosts_taken_for_one_are_read_in_prose(sentence: str) -> None:
    assert "taken-for-one-host" in read_document(sentence + "\n").hits


def test_a_hostname_localhost_is_read_as_a_setting() -> None:
    hits = read_document("hostname is localhost in every container\n").hits
    assert "hostname-localhost" in hits and not hits["hostname-localhost"].signal.failure


def test_one_host_in_a_plain_statement_is_not() -> None:
    assert "taken-for-one-host" not in read_document("all 8 ranks run on one node\n").hits


def test_the_mig_column_of_an_nvidia_smi_table_is_no_mig() -> None:
    table = (
        "+-----------------------------------------------------------------------------+\n"
        "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
        "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
        "|                               |                      |               MIG M. |\n"
        "|===============================+======================+======================|\n"
        "|   0  NVIDIA A100-SXM...  Off  | 00000000:07:00.0 Off |                    0 |\n"
        "| N/A   31C    P0    60W / 400W |      0MiB / 40960MiB |      0%      Default |\n"
        "|                               |                      |             Disabled |\n"
        "+-------------------------------+----------------------+----------------------+\n"
    )
    assert "mig-word" not in read_document(table).hits
    assert "mig-word" in read_document("MIG is enabled on GPU 0\n").hits


@pytest.mark.parametrize(
    ("text", "sid"),
    [
        ("the threads reference the same GPU with several ranks\n", "same-gpu"),
        ("the launcher creates a process on gpu0 for every other rank\n", "all-on-gpu0"),
        ("the solver starts 4 separate MPI setups instead of one job\n", "mpi-singletons"),
        ("each rank thinks it is rank 0 of 1\n", "mpi-singletons"),
    ],
)
def test_symptoms_in_other_words(text: str, sid: str) -> None:
    assert sid in read_document(text).hits, (sid, text)


def test_one_mpi_job_is_no_singleton_report() -> None:
    text = "mpirun -np 4 starts one MPI job of 4 ranks; rank 0 writes the output\n"
    assert "mpi-singletons" not in read_document(text).hits
