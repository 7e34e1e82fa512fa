"""Session 7: alarms need positive evidence (false alarms of healthy or wishful pastes).

Every paste below is written for these tests (no reporter's text).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from paste_findings import alarms_of, findings_of

from rankmap.adapters.local import explain_files
from rankmap.findings import Severity

HEALTHY_SETTINGS = [
    # a per-task GPU binding that works as intended, and a question about it
    "# Throughput per task with one GPU each\n\nWe launch with `srun --ntasks-per-node 4 "
    "--gpus-per-task 1 python train.py` and each task sees one GPU, as intended. How can we "
    "print the throughput of every task at the end of an epoch?\n",
    # a MIG profile question: MIG named three times, nothing failed
    "# Which MIG profile for a 7B model?\n\nOur A100 80GB has MIG mode enabled and we can create "
    "1g.10gb or 3g.40gb instances. Which profile is the better fit to serve a 7B model with "
    "batch size 8?\n",
]


@pytest.mark.parametrize("text", HEALTHY_SETTINGS)
def test_settings_without_any_failure_are_a_possible_cause_not_an_alarm(text: str) -> None:
    first = findings_of(text)[0]
    assert not alarms_of(text)
    # the setting is still named, at info: the reader learns what would matter
    assert first.code != "RM003"
    assert first.severity is Severity.INFO


def test_the_same_setting_next_to_a_reported_failure_still_alarms() -> None:
    text = HEALTHY_SETTINGS[1] + "\nThe second process fails: CUDA error: invalid device ordinal\n"
    assert [f.category for f in alarms_of(text)][:1] == ["mig"]


def test_no_error_without_a_failure_of_the_family() -> None:
    # three MIG settings add up to a decided score; without a failure it is no error
    text = HEALTHY_SETTINGS[1] + "\nSomething else is wrong with the throughput.\n"
    assert all(f.severity is not Severity.ERROR for f in findings_of(text))


def test_an_ignored_visible_devices_list_is_read_within_one_sentence() -> None:
    # "always" belongs to the next sentence: a wish is no report that CVD was ignored
    wish = (
        "# Feature request: respect CUDA_VISIBLE_DEVICES in the benchmark tool\n\n"
        "It would be nice if the benchmark tool could respect CUDA_VISIBLE_DEVICES so that we "
        "can pin it to a GPU of our choice. Today it always enumerates every GPU of the node.\n"
    )
    assert not alarms_of(wish)
    report = "CUDA_VISIBLE_DEVICES=1 is always ignored: the job still runs on GPU 0.\n"
    assert "cvd-ignored" in _signals(report)


def _signals(text: str) -> set[str]:
    from rankmap.explain.docread import read_document

    return set(read_document(text).hits)


# Failures outside the mapping, each next to a supported setting that often goes with a
# mapping problem: the setting ranks causes of a mapping failure, it is not one.
WATCHDOG = (
    "[rank3]:[E1204 10:12:01.123456 1234 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=5821, OpType=ALLREDUCE, NumelIn=262144, "
    "NumelOut=262144, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
)
OOM_ONE_PER_GPU = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
    "capacity of 79.15 GiB of which 1.02 GiB is free. Including non-PyTorch memory, this process "
    "has 78.10 GiB memory in use.\n"
)
SOCKET = (
    "node1:1234:1290 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to "
    "10.0.0.2<43117> failed : Software caused connection abort\n"
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/"
    "ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), "
    "NCCL version 2.21.5\n"
)
SETTINGS = [
    "srun --ntasks-per-node 4 --gpus-per-task 1 python train.py",
    "deepspeed --num_gpus 8 train.py",
    "docker run --gpus all img torchrun --nproc_per_node 4 train.py",
]


@pytest.mark.parametrize(
    "log", [WATCHDOG, OOM_ONE_PER_GPU, SOCKET], ids=["watchdog", "oom", "socket"]
)
@pytest.mark.parametrize("launch", SETTINGS, ids=["slurm-binding", "deepspeed", "docker"])
def test_a_failure_outside_the_mapping_next_to_a_setting_is_no_alarm(
    tmp_path: Path, log: str, launch: str
) -> None:
    path = tmp_path / "job.log"
    path.write_text(log)
    report = explain_files([path], launch=launch, env={"CUDA_VISIBLE_DEVICES": "0,1,2,3"})
    found = report.ordered_findings()
    alarms = [f for f in found if f.category != "other" and f.severity is not Severity.INFO]
    assert not alarms, [(f.code, f.severity) for f in alarms]
    # the setting is still named as a possible cause, for the reader to rule out
    assert any(f.category != "other" for f in found)


def test_an_ipc_failure_under_per_task_binding_is_a_mapping_failure(tmp_path: Path) -> None:
    path = tmp_path / "job.log"
    path.write_text(
        "The call to cuIpcOpenMemHandle failed. This is an unrecoverable error\n"
        "and will cause the program to abort.\n  cuIpcOpenMemHandle return value:  1\n"
    )
    report = explain_files([path], launch="srun -n 2 --gpus-per-task=1 ./app")
    first = report.ordered_findings()[0]
    assert first.category == "per_process_visible_devices"
    assert first.severity is not Severity.INFO


def test_a_setting_nccl_does_not_support_ranks_a_generic_failure() -> None:
    # MIG for several ranks (reference/nccl.md (c)) next to a generic NCCL error: an alarm
    text = "# NCCL error on our MIG node\n\nMIG mode is enabled on the A100; both ranks stop.\n"
    text += SOCKET.splitlines()[1] + "\n"
    first = findings_of(text)[0]
    assert first.category == "mig" and first.severity is not Severity.INFO


def test_a_message_quoted_in_a_sentence_is_a_mention_not_a_decided_error() -> None:
    typo_pr = (
        "# docs: fix typo in the device error section\n\n"
        "This pull request fixes a spelling mistake in the troubleshooting page: the heading "
        '"invalid devcie ordinal" now reads "invalid device ordinal". No code changes.\n'
    )
    assert all(f.severity is not Severity.ERROR for f in findings_of(typo_pr))


def test_the_same_message_printed_by_the_job_is_an_error() -> None:
    report = (
        "# Job fails at start\n\nRunning with 8 processes on our node:\n\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(report)[0].severity is Severity.ERROR


def test_ray_named_in_words_reads_an_invalid_ordinal_as_rays_per_worker_list() -> None:
    text = (
        "# Workers fail to set their device\n\nWith Ray 2.9 and two workers of one GPU each, "
        "a worker sometimes stops:\n\nRuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "per_process_visible_devices"
    # the word alone names no cause: no alarm without a failure
    assert not alarms_of("# Ray 2.9 on our cluster\n\nHow do we size the object store?\n")
    # other words that hold "Ray" are not Ray
    from rankmap.explain.docread import read_document

    assert "ray-named" not in read_document("X-Ray images, Raytune is unrelated.\n").hits


def test_an_undefined_nccl_symbol_in_a_title_without_its_colon_is_a_version_mismatch() -> None:
    text = "# undefined symbol ncclCommRegister\n\nAfter installing the requirements it fails.\n"
    assert findings_of(text)[0].category == "version_mismatch"


def test_gpu0_holding_a_lot_of_memory_for_every_process_is_no_device_selection() -> None:
    from rankmap.explain.docread import read_document

    sentence = "GPU 0 always occupies a lot of memory for each script, the later ones fail.\n"
    assert "gpu0-heavier" in read_document(sentence).hits
    text = "# Independent scripts, one GPU each\n\nEach script uses its own GPU, yet " + sentence
    assert findings_of(text)[0].category == "no_set_device"
