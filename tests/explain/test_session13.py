"""Session 13: shapes of the fresh dev parts of batches b18 and b19 and of this session's
reviews, restated here in our own words."""

from __future__ import annotations

from paste_findings import findings_of


def test_deepspeed_slot_error_retyped_without_quotes_is_still_the_launcher() -> None:
    # reporters retype the launcher's message and drop its quotes
    text = (
        "# train fails\nuser · description\nI get No slot '3' specified on host localhost, why?\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category, first.severity.value) == (
        "RM940",
        "launcher_config",
        "error",
    )


def test_a_job_that_uses_fewer_gpus_than_it_sees_was_started_with_fewer_processes() -> None:
    text = (
        "# Training uses only 2 gpus\n"
        "However many GPUs I expose with CUDA_VISIBLE_DEVICES, training only uses 2 GPUs.\n"
    )
    first = findings_of(text)[0]
    assert (first.category, first.severity.value) == ("launcher_config", "warning")


def test_two_gpus_per_process_is_not_a_job_that_uses_fewer_gpus() -> None:
    text = "# question\nEach worker only uses 2 GPUs per process by design; is NVLink used?\n"
    assert all(f.category != "launcher_config" for f in findings_of(text))


def test_an_engine_sharded_over_fewer_gpus_than_visible_runs_out_of_memory_on_one() -> None:
    text = (
        "### Reproduction\n\n"
        "CUDA_VISIBLE_DEVICES=0,1,2,3 text-generation-launcher --model-id big-model --num-shard 1"
        "  does not use all cards. Error on GPU 0 OutOfMemoryError: CUDA out of memory.\n"
    )
    first = findings_of(text)[0]
    assert (first.category, first.severity.value) == ("launcher_config", "warning")
    assert "tensor-parallel size of 1" in first.title + first.detail


def test_an_engine_sharded_over_every_visible_gpu_that_runs_out_of_memory_is_no_mapping() -> None:
    text = (
        "```\n$ CUDA_VISIBLE_DEVICES=0,1 vllm serve big-model --tensor-parallel-size 2\n```\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert all(f.category == "other" or f.severity.value == "info" for f in findings_of(text)), (
        findings_of(text)
    )


_LAUNCH_ONE_OF_EIGHT = (
    "# multi-GPU training always runs out of memory\n"
    "my launch script:\n"
    "#!/bin/bash\n"
    "python -m torch.distributed.launch \\\n"
    "    --nproc_per_node 1 \\\n"
    "    train.py --device 0,1,2,3,4,5,6,7 --batch-size 64\n"
    "\n"
    "The machine has 8 GPUs with 24G memory each.\n"
)


def test_unfenced_backslash_continuations_are_one_command() -> None:
    from rankmap.explain.docread import read_document

    facts = read_document(_LAUNCH_ONE_OF_EIGHT)
    assert facts.launch is not None and "--nproc_per_node 1" in facts.launch


def test_one_process_per_node_on_eight_gpus_that_runs_out_of_memory_is_the_launch() -> None:
    first = findings_of(_LAUNCH_ONE_OF_EIGHT)[0]
    assert (first.category, first.severity.value) == ("launcher_config", "warning")
    assert "1 process(es) per node on 8 GPU(s)" in first.detail


def test_a_launch_that_uses_every_gpu_and_runs_out_of_memory_is_no_launch_problem() -> None:
    text = _LAUNCH_ONE_OF_EIGHT.replace("--nproc_per_node 1", "--nproc_per_node 8")
    assert all(f.category != "launcher_config" for f in findings_of(text))


def test_a_gpu_of_a_profile_is_named_on_the_host_the_log_names(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from rankmap.cli import main

    log = tmp_path / "dup.log"
    log.write_text(
        "nodeA:11:20 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 18000 - Init START\n"
        "nodeA:12:21 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 18000 - Init START\n"
        "nodeA:12:21 [0] init.cc:775 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both "
        "on CUDA device 18000\n"
    )
    assert main(["explain", str(log), "--machine", "dgx-h100"]) == 1
    out = capsys.readouterr().out
    assert "nvidia-smi GPU 0 on nodeA (per profile dgx-h100-01" in out


# review 31: shapes of issue-template pastes (accelerate / transformers / Lightning / docker)
_ENV_DUMP = (
    "### System Info\n\n"
    "- `Accelerate` version: 0.30.0\n"
    "- `Accelerate` default config:\n"
    "\t- compute_environment: LOCAL_MACHINE\n"
    "\t- distributed_type: MULTI_GPU\n"
    "\t- num_processes: 4\n"
    "- Accelerate config: not found\n\n"
)


def test_an_environment_dump_is_no_launcher_evidence() -> None:
    from rankmap.explain.docread import read_document

    assert "accelerate-config" not in read_document(_ENV_DUMP).hits
    pasted_config = (
        "my default_config.yaml:\n```yaml\ndistributed_type: MULTI_GPU\nnum_processes: 4\n```\n"
    )
    assert "accelerate-config" in read_document(pasted_config).hits


def test_visible_devices_set_in_python_from_the_local_rank_is_per_process() -> None:
    text = (
        "```python\nimport os\n"
        'os.environ["CUDA_VISIBLE_DEVICES"] = os.environ.get("LOCAL_RANK", "0")\n'
        "import torch\ntorch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n```\n"
        "torchrun --nproc_per_node 4 train.py\n"
        "```\n[rank2]: RuntimeError: CUDA error: invalid device ordinal\n```\n"
    )
    first = findings_of(text)[0]
    assert first.category == "per_process_visible_devices", first


def test_lightning_asking_for_as_many_gpus_by_physical_ids_is_the_renumbering() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=2,3 python fit.py\n"
        "lightning_fabric.utilities.exceptions.MisconfigurationException: You requested gpu: [2, 3]\n"
        " But your machine only has: [0, 1]\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM240", "visible_devices_mismatch")
    assert "devices=[0, 1]" in first.fix
    # more GPUs asked for than visible stays a count problem
    more = text.replace("[2, 3]", "[0, 1, 2]")
    assert findings_of(more)[0].code != "RM240"


def test_host_gpu_ids_passed_into_a_container_given_a_subset_are_the_container() -> None:
    text = (
        "```\ndocker run --rm --gpus '\"device=4,5\"' -e CUDA_VISIBLE_DEVICES=4,5 img "
        "torchrun --nproc_per_node 2 train.py\n```\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    first = findings_of(text)[0]
    assert first.category == "container_mapping", first
    fine = text.replace("CUDA_VISIBLE_DEVICES=4,5", "CUDA_VISIBLE_DEVICES=0,1")
    assert not any("numbered 0..1 inside" in f.detail for f in findings_of(fine))


def test_a_store_bound_to_an_address_the_machine_does_not_own_names_the_node_rank() -> None:
    text = (
        "[W socket.cpp:697] [c10d] The server socket has failed to bind to 10.1.2.3:29500 "
        "(errno: 99 - Cannot assign requested address).\n"
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address.\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.category) == ("RM906", "launcher_config")
    assert "node rank" in first.fix
