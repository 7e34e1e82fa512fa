"""The first finding carries the ranks the input states (explain/named.py through engine.py):
failure lines first, else the prose, "both processes" as ranks 0 and 1, and for a host-identity
cause the ranks NCCL connected inside one host. Pastes are shapes written for these tests."""

from __future__ import annotations

import io

from rankmap.adapters.local import explain_files
from rankmap.explain.engine import _host_identity_ranks
from rankmap.findings import Report, finding


def _explain(text: str) -> Report:
    return explain_files(["-"], stdin=io.StringIO(text))


def _first(report: Report) -> tuple[str, tuple[int, ...]]:
    first = report.ordered_findings()[0]
    return first.code, tuple(first.ranks)


def test_failure_line_ranks_win_over_the_prose() -> None:
    code, ranks = _first(
        _explain(
            "rank 0 trains fine, the others die.\n\n"
            "[rank3]: RuntimeError: CUDA error: invalid device ordinal\n"
        )
    )
    assert code != "RM003"
    assert ranks == (3,)


def test_prose_rank_when_no_failure_line_names_one() -> None:
    code, ranks = _first(
        _explain(
            "Extra GPU memory on rank 0 with DDP\n\n"
            "Every process creates a CUDA context on GPU 0 because the script never calls "
            "torch.cuda.set_device, so GPU 0 runs out of memory first.\n"
        )
    )
    assert code != "RM003"
    assert ranks == (0,)


def test_both_processes_are_ranks_0_and_1() -> None:
    code, ranks = _first(
        _explain(
            "DDP ignores CUDA_VISIBLE_DEVICES\n\n"
            "I set CUDA_VISIBLE_DEVICES=1,2 and train with 2 GPUs, but both processes use the "
            "same single GPU instead of one GPU each.\n"
        )
    )
    assert code != "RM003"
    assert ranks == (0, 1)


def test_both_ranks_adds_the_other_rank_to_the_one_named() -> None:
    _, ranks = _first(
        _explain(
            "Rank 1 printed the waiting line. Rank 0 had already printed its line; both ranks "
            "reached the barrier and failed to rendezvous, hanging on cuda:0 because no "
            "device was set.\n"
        )
    )
    assert ranks == (0, 1)


def test_both_is_not_read_into_a_larger_job() -> None:
    _, ranks = _first(
        _explain("[rank5]: RuntimeError: CUDA error: invalid device ordinal\nboth ranks died\n")
    )
    assert ranks == (5,)


def test_host_identity_takes_the_ranks_nccl_connected_inside_one_host() -> None:
    base = finding("RM845", "t")
    assert base.category == "host_identity"
    lines = ["node-a:2521:2528 [0] INFO 0 -> 1 via P2P/IPC"]
    out = _host_identity_ranks([base], lines)
    assert out[0].ranks == (0, 1)
    other = finding("RM345", "t")
    assert _host_identity_ranks([other], lines)[0].ranks == ()  # another cause: not these
    named = finding("RM845", "t", ranks=[3])
    assert _host_identity_ranks([named], lines)[0].ranks == (3,)  # ranks named stay


def test_host_identity_paste_names_its_ranks() -> None:
    report = _explain(
        "Horovod does not work across two machines\n\n"
        "```bash\nmpirun -np 2 -H 10.1.2.3:1,10.1.2.4:1 -x NCCL_DEBUG=INFO python3 train.py\n```\n\n"
        "node-a:2521:2528 [0] INFO 0 -> 1 via P2P/IPC\n"
        "node-a:2521:2528 [0] INFO 0 -> 1 via P2P/IPC\n"
    )
    first = report.ordered_findings()[0]
    assert (first.category, first.ranks) == ("host_identity", (0, 1))


TORCHRUN_SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-01-01_00:00:00
  host      : node-a
  rank      : 1 (local_rank: 1)
  exitcode  : -15 (pid: 1235)
  error_file: <N/A>
  traceback : Signal 15 (SIGTERM) received by PID 1235
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-01-01_00:00:00
  host      : node-a
  rank      : 3 (local_rank: 3)
  exitcode  : 1 (pid: 1237)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_workers_stopped_by_sigterm_are_not_the_failing_ranks() -> None:
    text = "[rank3]: RuntimeError: CUDA error: invalid device ordinal\n" + TORCHRUN_SUMMARY
    code, ranks = _first(_explain(text))
    assert code != "RM003"
    assert ranks == (3,)


def test_ranks_all_on_cuda0_in_the_init_lines_are_the_ranks_named() -> None:
    init = "comm 0x7f0{r} rank {r} nranks 3 cudaDev 0 nvmlDev 0 - Init COMPLETE"  # NCCL 2.4-2.6
    lines = [f"h1:{10 + r}:2{r} [0] NCCL INFO " + init.format(r=r) for r in range(2)]
    lines.append(
        "h2:30:40 [1] NCCL INFO comm 0x7f09 rank 2 nranks 3 cudaDev 1 nvmlDev 1 - Init COMPLETE"
    )
    text = (
        "Training is slow and GPU 0 is out of memory: the script never calls set_device, "
        "so every process runs on GPU 0.\n\n" + "\n".join(lines) + "\n"
    )
    first = _explain(text).ordered_findings()[0]
    assert first.code != "RM003"
    assert first.ranks == (0, 1)  # the ranks of h1, not h2's rank 2
