"""Failure-class priors from the dev labels, one prior per failure, noisy context capped, and the
classes a log alone still shows (a traceback through set-up, an early watchdog timeout, a rank
variable nobody set, a device index of -1, every stack's device-count wording).

Every line below is a shape written for these tests (program output, no reporter's text).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rankmap.adapters.local import explain_files
from rankmap.explain import priors
from rankmap.explain.catalogue import SIGNALS
from rankmap.explain.docread import _search
from rankmap.findings import Finding, Severity

BY_ID = {s.id: s for s in SIGNALS}


def _findings(text: str, **kw: object) -> list[Finding]:
    report = explain_files([Path("-")], stdin=io.StringIO(text), **kw)  # type: ignore[arg-type]
    return report.ordered_findings()


def _alarms(fs: list[Finding]) -> list[str]:
    return [f.code for f in fs if f.category != "other" and f.severity is not Severity.INFO]


NEW_CLASS_EXAMPLES = {
    "init-traceback": [
        '  File "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 399, '
        "in set_device",
        '  File "/opt/venv/site-packages/torch/nn/parallel/distributed.py", line 457, in '
        "_sync_params_and_buffers",
        '  File "/opt/venv/site-packages/torch/distributed/distributed_c10d.py", line 1, in '
        "init_process_group",
    ],
    "collective-timeout": [
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)",
        "RuntimeError: NCCL timeout in communicator initialization.",
    ],
    "rank-env-missing": [
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
        "variable RANK expected, but not set",
        "KeyError: 'LOCAL_RANK'",
    ],
    "negative-device-index": [
        "RuntimeError: Device index must not be negative",
        "RuntimeError: Invalid device string: 'cuda:-1'",
    ],
    "device-count-message": [
        "ValueError: Total number of GPUs requested (8) exceeds available (4)",
        "RuntimeError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
        "RuntimeError: Found 4 GPUs but only 2 are visible",
        "ValueError: The number of required GPUs exceeds the total number of available GPUs",
        "the node is only seeing one gpu in the allocation",
        "RuntimeError: Unable to initialize backend 'cuda': INTERNAL: no supported devices found",
    ],
    "no-cuda-device": ["RuntimeError: No HIP GPUs are available", "hipErrorNoDevice"],
    "exception-any": [
        "RuntimeError: worker setup failed",
        "ray.exceptions.RayTaskError(RuntimeError): ray::Worker.init() (pid=7, ip=10.0.0.2)",
        "Traceback (most recent call last):",
        "  torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
    ],
    "cuda-init-unknown": [
        "UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
        "incorrectly set up environment. Setting the available devices to be zero.",
    ],
}
NOT_OF_THE_CLASS = {
    "collective-timeout": [  # a timeout deep into training is not the first collective
        "WorkNCCL(SeqNum=48213, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)"
    ],
    "init-traceback": ['  File "train.py", line 12, in forward'],
    "invalid-device-any": ["RuntimeError: Invalid device string: 'cuda:abc'"],
    "docker-daemon": ["module must have its parameters on device cuda:0 (device_ids[0])"],
    "outside-python": ["KeyError: 'LOCAL_RANK'"],
    "exception-any": ["an error occurred in the loss", "raise RuntimeError(msg)"],
}


def test_new_classes_match_their_family_through_the_prefilter() -> None:
    for sid, lines in NEW_CLASS_EXAMPLES.items():
        sig = BY_ID[sid]
        assert sig.failure, sid
        for line in lines:
            text = "noise\n" * 30 + line + "\n" + "noise\n" * 30
            assert _search(sig, text, text.lower()), (sid, line)
            assert any(k in line.lower() for k in sig.keys), (sid, line)
    for sid, lines in NOT_OF_THE_CLASS.items():
        for line in lines:
            assert not BY_ID[sid].pattern.search(line), (sid, line)


def test_a_class_prior_sums_to_its_mass_and_follows_the_data() -> None:
    for cls in priors.HAND:
        weights = priors.prior(cls)
        assert weights, cls
        assert sum(weights.values()) <= priors.MASS[cls] + 0.05, cls
        assert all(w >= priors.MIN_WEIGHT for w in weights.values()), cls
    # the class's signal carries exactly its prior
    assert dict(BY_ID["invalid-device-any"].supports) == priors.prior("invalid-device-any")


def test_prior_smoothing_moves_from_the_hand_prior_towards_the_counts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(priors, "COUNTS", {})
    hand = priors.prior("comm-error-any")
    assert max(hand, key=lambda c: hand[c]) == "other"
    monkeypatch.setattr(priors, "COUNTS", {"comm-error-any": {"version_mismatch": 40.0}})
    seen = priors.prior("comm-error-any")
    assert max(seen, key=lambda c: seen[c]) == "version_mismatch"
    assert seen["version_mismatch"] <= priors.MASS["comm-error-any"]


def test_one_prior_per_failure_the_most_specific_class() -> None:
    assert priors.leading_class({"device-error-any", "invalid-device-any"}) == "invalid-device-any"
    assert priors.leading_class({"comm-error-any", "device-error-any"}) == "comm-error-any"
    assert priors.leading_class({"cvd-mentioned"}) is None
    pair = {"comm-error-any", "nccl-cuda-call-failed"}
    assert priors.leading_class(pair) == "nccl-cuda-call-failed"
    assert set(priors.ORDER) == set(priors.HAND)


def test_noisy_context_supports_are_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(priors, "NOISY", {"multi-node": {"host_identity": 0.1}})
    capped = dict(
        priors.capped("multi-node", (("global_rank_as_device", 1.0), ("host_identity", 1.0)))
    )
    assert capped == {"global_rank_as_device": 1.0, "host_identity": priors.NOISY_WEIGHT}
    assert priors.capped("mig-word", (("mig", 3.0),)) == (("mig", 3.0),)


@pytest.mark.parametrize(
    "text",
    [
        # a traceback cut inside DDP's first broadcast: nothing but where it failed
        "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in <module>\n'
        "    model = DistributedDataParallel(model)\n"
        '  File "/venv/torch/nn/parallel/distributed.py", line 446, in __init__\n'
        "    self._sync_params_and_buffers(authoritative_rank=0)\n"
        '  File "/venv/torch/nn/parallel/distributed.py", line 457, in _sync_params_and_buffers\n',
        "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000)\n"
        "  ran for 721595 milliseconds before timing out\n",
        "KeyError: 'LOCAL_RANK'\n",
        "RuntimeError: Device index must not be negative\n",
        "ValueError: Total number of GPUs requested (8) exceeds available (4)\n",
    ],
)
def test_a_log_of_this_family_alone_gets_a_warning_guess_with_the_deciding_question(
    text: str,
) -> None:
    first = _findings(text)[0]
    assert first.code != "RM003", text
    assert first.severity is Severity.WARNING, (text, first.code)
    assert "decide" in first.detail.lower(), (text, first.code)


def test_a_missing_rank_variable_is_the_launcher() -> None:
    for text in (
        "KeyError: 'LOCAL_RANK'\n",
        "ValueError: Error initializing torch.distributed using env:// rendezvous: environment "
        "variable WORLD_SIZE expected, but not set\n",
    ):
        assert _findings(text)[0].category == "launcher_config", text


def test_an_unrelated_key_error_stays_outside_the_family() -> None:
    fs = _findings("Traceback (most recent call last):\nKeyError: 'learning_rate'\n")
    assert fs[0].code == "RM003"


def test_an_exception_alone_is_a_weak_failure_leaning_to_other_and_python_errors_stay_outside() -> (
    None
):
    # an exception of no known class: a failure, but its prior names no mapping category
    fs = _findings("Traceback (most recent call last):\nRuntimeError: worker setup failed\n")
    assert fs[0].code != "RM003"
    assert not _alarms(fs)
    # Python's own exceptions are read on every line, not only on the first of a segment
    sig = BY_ID["outside-python"]
    text = "INFO starting\nINFO step 1\nModuleNotFoundError: No module named 'apex'\n"
    assert _search(sig, text, text.lower())
    fs = _findings("Traceback (most recent call last):\n" + text)
    assert fs[0].code == "RM003"


def test_a_set_up_traceback_next_to_an_oom_is_no_mapping_alarm() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/venv/torch/nn/parallel/distributed.py", line 457, in _sync_params_and_buffers\n'
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert not _alarms(_findings(text))


def test_a_set_up_traceback_next_to_a_network_timeout_is_no_mapping_alarm() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/venv/torch/distributed/distributed_c10d.py", line 9, in init_process_group\n'
        "RuntimeError: connect() timed out. Connection timed out\n"
    )
    assert not _alarms(_findings(text))


def test_an_undecided_finding_gives_its_category_no_more_than_a_prior() -> None:
    from rankmap.explain.score_model import Scores
    from rankmap.explain.scoring import UNDECIDED_MARK, UNDECIDED_POINTS, _from_findings
    from rankmap.findings import finding

    undecided = finding(
        "RM102", "invalid device ordinal", detail=f"{UNDECIDED_MARK} whether ...", ranks=[1]
    )
    decided = finding("RM201", "CVD narrower than the processes", detail="CVD=0,1; nproc 4")
    s = Scores()
    _from_findings([undecided], s)
    assert s.points["oversubscribed"] == UNDECIDED_POINTS  # not 2: the class prior decides
    assert s.failure
    s = Scores()
    _from_findings([decided], s)
    assert s.points["visible_devices_mismatch"] == 9.0


def test_slurm_tasks_selecting_by_local_rank_point_at_per_task_binding() -> None:
    text = (
        "$ srun -N 1 --ntasks-per-node=4 python train.py\n"
        "    torch.cuda.set_device(local_rank)\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert _findings(text)[0].category == "per_process_visible_devices"
    # the same error under torchrun on a node with fewer GPUs than processes: oversubscribed
    text = (
        "$ torchrun --nproc_per_node=8 train.py\n"
        "    torch.cuda.set_device(local_rank)\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    smi = "\n".join(
        f"|   {i}  NVIDIA A100-SXM4-40GB          On  | 00000000:0{i}:00.0 Off |      0 |"
        for i in range(2)
    )
    assert _findings(text + smi + "\n")[0].category == "oversubscribed"


def test_an_invalid_ordinal_on_a_multi_node_launch_is_the_global_rank(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_text("RuntimeError: CUDA error: invalid device ordinal\n")
    fs = explain_files([log], launch="torchrun --nnodes 2 --nproc-per-node 8 train.py")
    assert fs.ordered_findings()[0].category == "global_rank_as_device"
    one = explain_files([log], launch="torchrun --nnodes 1 --nproc-per-node 8 train.py")
    assert one.ordered_findings()[0].category != "global_rank_as_device"


def test_deepspeed_given_num_gpus_ignores_cvd(tmp_path: Path) -> None:
    log = tmp_path / "w.log"
    log.write_text('Traceback (most recent call last):\n  File "/venv/bin/deepspeed", line 6\n')
    env = {"CUDA_VISIBLE_DEVICES": "1"}
    fs = explain_files([log], launch="deepspeed --num_gpus=1 train.py", env=env)
    assert fs.ordered_findings()[0].category == "launcher_config"
    plain = explain_files([log], launch="deepspeed train.py", env=env)
    assert plain.ordered_findings()[0].category != "launcher_config"


@pytest.mark.parametrize(
    "error",
    [
        "torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. "
        "1/2 clients joined.",
        "torch.distributed.DistNetworkError: The client socket has timed out after 900s",
        "RuntimeError: Socket Timeout",
    ],
)
def test_a_rendezvous_timeout_inside_init_process_group_is_no_mapping_alarm(error: str) -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/venv/torch/distributed/distributed_c10d.py", line 9, in init_process_group\n'
        f"{error}\n"
    )
    assert not _alarms(_findings(text))


def test_the_message_class_decides_before_the_traceback_frames() -> None:
    matched = {"init-traceback", "comm-error-any"}
    assert priors.leading_class(matched) == "comm-error-any"


def test_a_generic_nccl_error_adds_no_prior_next_to_a_more_specific_class() -> None:
    """'NCCL Error 1: unhandled cuda error': the failed CUDA call's class prior speaks for the
    failure; the generic 'NCCL error' marker adds no 'other' points of its own on top."""
    from paste_findings import findings_of

    text = "# NCCL Error 1: unhandled cuda error\n\nThe job stops at the first all_reduce.\n"
    first = findings_of(text)[0]
    hand = priors.prior("nccl-cuda-call-failed")
    assert first.category == max(hand, key=lambda c: hand[c])
    assert "[nccl-generic-error]" not in first.detail
