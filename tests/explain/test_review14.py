"""Review 14 (a black-box review with 55 pastes written by a helper): the shapes it found,
restated here."""

from __future__ import annotations

from paste_findings import alarms_of, findings_of


def test_a_visible_list_set_from_each_process_rank_is_per_process_not_one_gpu() -> None:
    text = (
        "# invalid device ordinal on every rank but 0\n"
        "Each task runs a wrapper that does `export CUDA_VISIBLE_DEVICES=$SLURM_LOCALID` and the "
        "script calls `torch.cuda.set_device(local_rank)`.\n"
        "```\nexport CUDA_VISIBLE_DEVICES=$SLURM_LOCALID\nexec python train.py\n```\n"
        "```\n[rank1]: RuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    found = findings_of(text)
    assert found[0].category == "per_process_visible_devices"
    # the reference is not a one-entry list: no visible-devices error built on it
    assert not [f for f in found if f.code == "RM201"]


def test_a_container_given_the_right_gpus_with_a_count_of_two_is_no_alarm() -> None:
    text = (
        "# docker run --gpus '\"device=2,3\"': DDP trains fine, a NUMA warning at start-up\n"
        "```\ndocker run --rm --gpus '\"device=2,3\"' img torchrun --nproc_per_node=2 train.py\n```\n"
        "Inside the container torch.cuda.device_count() is 2 and the ranks use cuda:0 and cuda:1.\n"
        "```\nW0311 12:01:05 numa.cc:88] Could not read node1/cpulist, NUMA affinity not set\n```\n"
        "Can I ignore it? Training works.\n"
    )
    assert alarms_of(text) == []


def test_a_count_of_none_or_one_is_still_a_symptom() -> None:
    text = (
        "# only one GPU inside the container\n"
        "```\ndocker run --gpus all img torchrun --nproc_per_node=4 train.py\n```\n"
        "torch.cuda.device_count() returns 1 and ranks 1-3 fail.\n"
        "```\nRuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    assert findings_of(text)[0].category != "other"


def test_a_host_name_with_gpu_in_it_is_not_a_device_word() -> None:
    text = (
        "# where does ModelCheckpoint write on two nodes?\n"
        "Two nodes under Slurm, 4 GPUs each; training is fine. The checkpoint of global rank 0 "
        "is on gpu-n01 only, since /scratch is node-local. Is that expected?\n"
    )
    assert "[rank-not-local]" not in findings_of(text)[0].detail
    assert alarms_of(text) == []


def test_an_alternative_with_only_a_shared_pattern_is_info() -> None:
    log = (
        "node1:2301:2301 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.11<0>\n"
        "node1:4410:4410 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.12<0>\n"
        "node1:2301:2390 [0] NCCL INFO comm 0x55d1 rank 0 nranks 2 cudaDev 0 busId 1e000 - "
        "Init START\n"
        "node1:4410:4499 [0] NCCL INFO comm 0x7a2c rank 1 nranks 2 cudaDev 0 busId 1e000 - "
        "Init START\n"
        "node1:4410:4499 [0] init.cc:1050 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 "
        "both on CUDA device 1e000\n"
    )
    found = findings_of(log)
    assert found[0].category == "host_identity"
    mig = [f for f in found if f.category == "mig"]
    assert mig and all(f.severity.value == "info" for f in mig)


def test_a_gpu_count_told_in_prose_is_quoted_where_it_is_told() -> None:
    text = (
        "# invalid device ordinal with torchrun\n"
        "My workstation has 2 GPUs.\n"
        "```\ntorchrun --nproc_per_node=4 train.py\n```\n"
        "```\n[rank2]: RuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert first.category == "oversubscribed"
    assert any("My workstation has 2 GPUs." in q for q in first.evidence)


def test_a_memory_size_next_to_gpus_is_no_gpu_count() -> None:
    from rankmap.explain.docread import read_document

    assert read_document("I run it on a machine with 3 V100 32G GPUs.\n").stated_gpus != 32
    assert read_document("Our nodes have 80GB GPUs.\n").stated_gpus is None
    assert read_document("My workstation has 2 GPUs.\n").stated_gpus == 2
    assert read_document("Each node has 8x A100 GPUs.\n").stated_gpus == 8


def test_one_profile_given_for_each_of_two_nodes_is_no_host_collision(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import io
    from pathlib import Path

    from rankmap.adapters.local import explain_files
    from rankmap.inventory import load_machines

    lines = []
    for host, base in (("node-a", 0), ("node-b", 4)):
        for local in range(4):
            rank = base + local
            lines.append(
                f"{host}:{100 + local}:{200 + local} [{local}] NCCL INFO comm 0x{rank:04x} rank "
                f"{rank} nranks 8 cudaDev {local} busId {0x18 + local * 0x10:x}000 - Init START"
            )
    lines.append("[rank5]: RuntimeError: stack expects each tensor to be equal size")
    log = tmp_path / "job.log"
    log.write_text("\n".join(lines) + "\n")
    report = explain_files(
        [Path(log)],
        stdin=io.StringIO(""),
        launch="torchrun --nnodes 2 --nproc-per-node 4 --rdzv-endpoint node-a:29500 train.py",
        machines=load_machines(["workstation-4gpu", "workstation-4gpu"]),
    )
    alarms = [
        f for f in report.ordered_findings()
        if f.category != "other" and f.severity.value != "info"
    ]  # fmt: skip
    assert alarms == []


def test_review18_a_setting_that_works_now_is_no_complaint() -> None:
    text = (
        "# jax.distributed.initialize() must be called before any JAX computations\n"
        "I called jax.devices() at import time. Moved the print after initialize. One process "
        "per GPU via SLURM, works now.\n"
        "RuntimeError: jax.distributed.initialize() must be called before any JAX computations.\n"
    )
    assert all(f.category != "per_process_visible_devices" for f in findings_of(text)[:1])


def test_review18_a_version_guess_gives_a_framework_neutral_fix() -> None:
    text = (
        "# TensorFlow sees no GPU\n"
        "W tensorflow/stream_executor/platform/default/dso_loader.cc:64] Could not load dynamic "
        "library 'libcudnn.so.8'; dlerror: libcudnn.so.8: cannot open shared object file\n"
    )
    first = findings_of(text)[0]
    assert first.category == "version_mismatch" and "PyTorch" not in first.fix


def test_review19_a_transport_info_line_does_not_demote_a_duplicate_gpu() -> None:
    dup = (
        "node1:101:201 [1] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 "
        "both on CUDA device 1a000\n"
    )
    info = "node1:100:200 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC\n"
    alone, with_info = findings_of(dup)[0], findings_of(info + dup)[0]
    assert with_info.code == alone.code == "RM103"
    assert with_info.severity == alone.severity


def test_review19_quotes_of_a_file_name_the_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from pathlib import Path

    from rankmap.adapters.local import explain_files

    log = tmp_path / "job.log"
    log.write_text("# ordinal\nRuntimeError: CUDA error: invalid device ordinal\n")
    found = explain_files([Path(log)])
    quotes = [q for f in found.findings for q in f.evidence]
    assert quotes and all("<stdin>" not in q for q in quotes)


def test_review19_a_modulo_by_a_device_count_of_zero_is_no_gpu_visible() -> None:
    log = (
        "[rank0]: Traceback (most recent call last):\n"
        '[rank0]:   File "train.py", line 5, in <module>\n'
        "[rank0]:     torch.cuda.set_device(local_rank % torch.cuda.device_count())\n"
        "[rank0]: ZeroDivisionError: integer modulo by zero\n"
    )
    assert findings_of(log)[0].category == "visible_devices_mismatch"
    other = (
        "[rank0]:     steps = total % batches\n[rank0]: ZeroDivisionError: integer modulo by zero\n"
    )
    assert findings_of(other)[0].category != "visible_devices_mismatch"
