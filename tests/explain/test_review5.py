"""Review of session 5's explain change: false alarms found by writing inputs that are healthy
or that describe the setup without reporting a failure.

Every prose sentence is written for these tests; the NCCL lines follow NCCL's own format
(reference/nccl.md, "Bootstrap / network selection").
"""

from __future__ import annotations

import pytest
from paste_findings import alarms_of as _alarms

from rankmap.explain.docread import read_document

SID = "device-selection-problem"


@pytest.mark.parametrize(
    "sentence",
    [
        # advice in the second person: a condition, not a report
        "If you get an error, check that the device ids you pass are smaller than the GPU count.",
        # a way of doing it named against another: no wrong outcome
        "Call torch.cuda.set_device once per process instead of passing a device to each tensor.",
        # a problem word that is denied
        "Training on 8 GPUs finished without errors and nvidia-smi showed all eight busy.",
        "Our launcher never fails to pin the GPU: each worker calls set_device(local_rank).",
    ],
)
def test_advice_and_denied_problems_are_no_report_of_a_wrong_gpu(sentence: str) -> None:
    assert SID not in read_document(sentence + "\n").hits
    assert not _alarms(sentence + "\n")


@pytest.mark.parametrize(
    "report",
    [
        "The job fails with an error as soon as I change the device ids.",
        "It uses GPU 0 instead of GPU 3 although the device ids say otherwise.",
        "The device ids are wrong and training crashes with errors.",
    ],
)
def test_reports_of_a_wrong_gpu_are_still_read(report: str) -> None:
    assert SID in read_document(report + "\n").hits


_HEALTHY_INIT = """\
node1:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>
node1:1234:1234 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so. Using internal network plugin.
NCCL version 2.21.5+cuda12.4
node1:1234:1290 [0] NCCL INFO NET/IB : No device found.
node1:1234:1290 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>
node1:1234:1290 [0] NCCL INFO Using network Socket
node1:1234:1290 [0] NCCL INFO ncclCommInitRank comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1a2b - Init START
node1:1235:1291 [1] NCCL INFO ncclCommInitRank comm 0x55e0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 commId 0x1a2b - Init START
node1:1234:1290 [0] NCCL INFO ncclCommInitRank comm 0x55d0 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 18000 commId 0x1a2b - Init COMPLETE
node1:1235:1291 [1] NCCL INFO ncclCommInitRank comm 0x55e0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 2a000 commId 0x1a2b - Init COMPLETE
"""  # noqa: E501


def test_a_healthy_init_log_without_infiniband_is_no_alarm() -> None:
    # "NET/IB : No device found." is NCCL saying the node has no IB NIC, on every such host
    assert "device-count-message" not in read_document(_HEALTHY_INIT).hits
    assert not _alarms(_HEALTHY_INIT)


def test_no_gpu_found_is_still_a_device_count_message() -> None:
    assert "device-count-message" in read_document("RuntimeError: No devices found\n").hits


@pytest.mark.parametrize(
    "sentence",
    [
        "With torchrun on one node, 8 processes run on all 8 GPUs, one each.",
        "Our 4 workers sit on all the GPUs, one per GPU, as the guide says.",
    ],
)
def test_one_process_per_gpu_described_is_no_shared_gpu(sentence: str) -> None:
    assert "procs-on-every-gpu" not in read_document(sentence + "\n").hits
    assert not _alarms(sentence + "\n")


def test_processes_on_every_gpu_are_still_read() -> None:
    text = "All 4 processes run on every GPU and each takes memory on all of them.\n"
    assert "procs-on-every-gpu" in read_document(text).hits


def test_one_each_after_each_gpu_is_the_design_too() -> None:
    assert (
        "procs-on-every-gpu"
        not in read_document(
            "The 8 ranks run on every GPU, one per GPU, so each card holds one rank.\n"
        ).hits
    )


@pytest.mark.parametrize(
    ("sentence", "sid"),
    [
        # a true fact about one machine, neutral verbs: no host taken for another
        ("NCCL detects that all ranks are on the same node and uses P2P over NVLink.", None),
        ("In the default container the hostname is localhost, which is fine on one machine.", None),
        # advice that names the failure as what to avoid
        (
            "Run both copies with mpirun so they form one job instead of two separate MPI runs.",
            None,
        ),
        ("Make sure your launcher is configured to respect CUDA_VISIBLE_DEVICES.", "cvd-ignored"),
    ],
)
def test_descriptions_and_advice_are_no_mapping_alarm(sentence: str, sid: str | None) -> None:
    assert not _alarms(sentence + "\n")
    if sid:
        assert sid not in read_document(sentence + "\n").hits


@pytest.mark.parametrize(
    ("report", "sid"),
    [
        ("NCCL thinks the two machines are the same host and the job hangs.", "taken-for-one-host"),
        ("All four pods report hostname localhost and NCCL fails.", "hostname-localhost"),
        ("The script runs as 4 separate MPI jobs, every rank is rank 0 of 1.", "mpi-singletons"),
        ("This PR makes the launcher respect CUDA_VISIBLE_DEVICES.", "cvd-ignored"),
    ],
)
def test_the_reports_those_signals_are_for_still_read(report: str, sid: str) -> None:
    assert sid in read_document(report + "\n").hits
