"""Session 16: shapes written here, restating b22 dev rows in our own words."""

from __future__ import annotations

import subprocess
import sys

import pytest
from paste_findings import findings_of

from rankmap.explain.document import Segment, env_assignments, env_sentences


def _lead(text: str) -> tuple[str, str]:
    first = findings_of(text)[0]
    return first.category, first.severity.value


# --- a duplicate pair of neighbouring ranks --------------------------------------------------


@pytest.mark.parametrize(
    "warn",
    [
        "Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 2b000",
        "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 2b000",
    ],
)
def test_neighbouring_ranks_on_one_gpu_point_at_no_device_selection(warn: str) -> None:
    text = f"# multi-gpu finetune crashes\n{warn}\n"
    found = findings_of(text)
    # the failure is certain: the guess that explains it is an error (exit 1), the symptom follows
    assert (found[0].category, found[0].severity.value) == ("no_set_device", "error")
    assert found[1].code == "RM103"


def test_ranks_a_gpu_count_apart_stay_a_wrap() -> None:
    # rank 0 and rank 4: a selection that wraps over four GPUs, not every rank on one GPU
    text = "Duplicate GPU detected : rank 0 and rank 4 both on CUDA device 2b000\n"
    assert findings_of(text)[0].category == "oversubscribed"


def test_neighbours_on_one_gpu_with_init_lines_on_two_addresses_stay_host_identity() -> None:
    # one rank per machine, both machines named alike: neighbours share as merged hosts too
    log = (
        "gpu-a:100:100 [0] NCCL INFO Bootstrap : Using eth0:10.2.0.5<0>\n"
        "gpu-a:200:200 [0] NCCL INFO Bootstrap : Using eth0:10.2.0.6<0>\n"
        "gpu-a:100:110 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 busId 2b000 - Init START\n"
        "gpu-a:200:210 [0] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 0 busId 2b000 - Init START\n"
        "gpu-a:200:210 [0] init.cc:1050 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 "
        "both on CUDA device 2b000\n"
    )
    assert findings_of(log)[0].category == "host_identity"


def test_a_certain_shared_gpu_keeps_exit_code_1_with_a_guessed_cause(tmp_path) -> None:
    paste = tmp_path / "issue.txt"
    paste.write_text("Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 2b000\n")
    run = subprocess.run(
        [sys.executable, "-m", "rankmap", "explain", str(paste)], capture_output=True, text=True
    )
    assert run.returncode == 1, run.stdout + run.stderr


# --- NCCL's CUDA-graph refusal -----------------------------------------------------------------


def test_nccls_graph_capture_refusal_is_a_version_mismatch() -> None:
    text = (
        "Two GPUs with tensor parallel fail, one GPU works.\n"
        "host:12:12 [1] NCCL INFO NCCL version 2.19.3+cuda11.0\n"
        "host:12:40 [1] enqueue.cc:1000 NCCL WARN NCCL cannot be captured in a graph if either it "
        "wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n"
    )
    assert _lead(text)[0] == "version_mismatch"


# --- a visible-devices list that did not reach the process -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I ran `export CUDA_VISIBLE_DEVICES=3` before starting the server, yet nvidia-smi shows "
        "nothing on GPU 3 and only GPU 0 is filled.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 6.00 MiB is free.\n",
        "export CUDA_VISIBLE_DEVICES=2，指定了2号卡，可是还是跑在0号卡上，nvidia-smi 里 2号卡是空的。\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 64.00 MiB (GPU 0; "
        "23.65 GiB total capacity; 3.10 GiB already allocated; 12.00 MiB free)\n",
        "# CUDA_VISIBLE_DEVICE=2 has no effect\nexport CUDA_VISIBLE_DEVICE=2\npython train.py\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 0 has a "
        "total capacity of 23.65 GiB of which 201.44 MiB is free.\n",
        "CUDA_VISIBLE_DEVICES=1 picks the wrong card on my desktop, an old small one\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a "
        "total capacity of 1.95 GiB of which 1.02 GiB is free.\n",
    ],
)
def test_work_on_gpu0_under_a_list_without_gpu0_is_a_visible_devices_mismatch(text: str) -> None:
    found = findings_of(text)
    assert found[0].category == "visible_devices_mismatch"
    assert found[0].severity.value in ("warning", "error")
    # its own fix (where the list did not apply), not the multi-process one
    assert "spelled exactly" in found[0].fix
    assert "as many processes" not in found[0].fix


@pytest.mark.parametrize(
    "text",
    [
        # GPU 0 busy is why the user picked GPU 3: the list worked, the model is too big
        "GPU 0 is used by a colleague, so I export CUDA_VISIBLE_DEVICES=3.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 6.00 GiB is free.\n",
        # the error message says GPU 0 (PyTorch numbers the visible GPUs from 0); nvidia-smi shows
        # the process on the listed GPU and GPU 0 empty; a smaller batch runs (review 58)
        "指定了 1 号卡，报错却说 GPU 0 显存不足？\nCUDA_VISIBLE_DEVICES=1 python train.py --bs 128\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total "
        "capacity of 79.15 GiB of which 2.22 GiB is free.\n"
        "nvidia-smi 看，进程确实在 1 号卡上，0 号卡是空的。把 --bs 改成 32 就能跑了。\n",
        # "the error still says GPU 0": a message, not a sighting
        "I export CUDA_VISIBLE_DEVICES=3 but the error still says GPU 0 ran out of memory.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 6.00 GiB is free.\n",
        # a list that includes GPU 0
        "export CUDA_VISIBLE_DEVICES=0,1 and still only GPU 0 is used.\n",
    ],
)
def test_gpu0_named_without_a_contradicted_list_is_no_visible_devices_mismatch(text: str) -> None:
    found = findings_of(text)
    assert not any("did not reach the process" in f.detail for f in found[:1])


def test_an_assignment_ends_at_full_width_punctuation_and_its_sentence_is_prose() -> None:
    seg = Segment("env", "export CUDA_VISIBLE_DEVICES=5，设置了使用5号卡", 1)
    assert env_assignments(seg) == {"CUDA_VISIBLE_DEVICES": "5"}
    assert [t.text for t in env_sentences(seg)] == ["设置了使用5号卡"]
    plain = Segment("env", "export CUDA_VISIBLE_DEVICES=5", 1)
    assert env_assignments(plain) == {"CUDA_VISIBLE_DEVICES": "5"}
    assert env_sentences(plain) == []


# --- GPU 0 named by its index -------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "# fix worker device\nIn tensor-parallel workers the config holds no index, so every "
        "worker falls back to device_id=0 and they all register on one local GPU.\n",
        "All ranks allocate on gpu index 0 when I start 4 workers.\n",
    ],
)
def test_every_worker_on_a_named_index_0_is_a_pile_up(text: str) -> None:
    assert findings_of(text)[0].category == "no_set_device"


# --- review 58 -------------------------------------------------------------------------------


def test_neighbours_sharing_under_a_one_gpu_list_are_the_list_not_a_missing_selection() -> None:
    text = (
        "Duplicate GPU on rank 2 and rank 3 after a .bashrc change\n\n"
        "  torchrun --nproc_per_node 4 train.py\n\n"
        "[rank2]: Duplicate GPU detected : rank 2 and rank 3 both on CUDA device 61000\n\n"
        'Since yesterday my ~/.bashrc has `export CUDA_VISIBLE_DEVICES="3"`.\n'
    )
    assert findings_of(text)[0].category == "visible_devices_mismatch"


def test_deepspeeds_own_list_is_no_count_of_the_machines_gpus() -> None:
    # --num_gpus 8 on a 4-GPU box: DeepSpeed sets CUDA_VISIBLE_DEVICES=0..7 from --num_gpus
    text = (
        "deepspeed --num_gpus 8 train.py on our 4x A100 server\n"
        "[INFO] [launch.py:165:main] Setting CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n"
        "torch.distributed.DistBackendError: NCCL error, invalid usage\n"
        "Last error:\nDuplicate GPU detected : rank 4 and rank 0 both on CUDA device 4f000\n"
    )
    assert findings_of(text)[0].category == "oversubscribed"


def test_a_list_that_still_ooms_is_no_ignored_list() -> None:
    text = (
        'device_map="auto" over CUDA_VISIBLE_DEVICES=2,3 still OOMs on "GPU 1"\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 672.00 MiB. GPU 1 has a "
        "total capacity of 79.15 GiB of which 401.56 MiB is free.\n"
        "nvidia-smi: GPU 2 and GPU 3 are full with my process; the model needs 280 GB.\n"
    )
    found = findings_of(text)
    assert not any(f.category != "other" and f.severity.value != "info" for f in found)


# --- review 59 -------------------------------------------------------------------------------


def test_a_command_under_a_line_that_names_its_machine_is_that_machines_launch() -> None:
    cmd = "torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=10.9.0.1 train.py"
    text = (
        "two-node job waits forever in init_process_group\n\n"
        f"Node A (10.9.0.1):\n    {cmd}\nNode B (10.9.0.2):\n    {cmd}\n\n"
        "Nothing after the first log line.\n"
    )
    lead = findings_of(text)[0]
    assert "same node rank" in lead.detail
    # the same command twice with no machine named over it is one command pasted twice
    once = "two-node job waits forever\n\n" + f"    {cmd}\n\n    {cmd}\n"
    assert not any("same node rank" in f.detail for f in findings_of(once))


@pytest.mark.parametrize(
    "line",
    [
        "torchrun in docker: ranks 1-3 crash with invalid device ordinal",
        "accelerate launch crashes on 4 of 8 processes",
        "deepspeed multi-node: ranks 4-7 crash",
        "torchrun --nproc_per_node=4, 4 GPUs, each rank on its own GPU.",
    ],
)
def test_a_sentence_that_starts_with_a_launcher_is_no_launch(line: str) -> None:
    from rankmap.explain.document import reads_as_prose

    assert reads_as_prose(line)


@pytest.mark.parametrize(
    "line",
    [
        "torchrun --nproc_per_node 4 train.py",
        "accelerate launch --config_file a.yaml t.py",
        "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 t.py",
        "srun hostname",
        "deepspeed --include localhost:0,1 t.py",
    ],
)
def test_a_launch_line_is_no_sentence(line: str) -> None:
    from rankmap.explain.document import reads_as_prose

    assert not reads_as_prose(line)


def test_rays_host_memory_monitor_is_no_cuda_out_of_memory() -> None:
    text = (
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on "
        "memory. Memory on the node was 61.2GB / 62.0GB.\n"
    )
    assert not any("CUDA out of memory" in f.title for f in findings_of(text))


def test_a_per_task_gpu_in_jax_is_told_to_count_from_zero() -> None:
    text = (
        "srun --ntasks-per-node=4 --gpus-per-task=1 python train.py\n"
        "jax.distributed.initialize(local_device_ids=[int(os.environ['SLURM_LOCALID'])])\n"
        "ValueError: Invalid local device id 2. Valid range is [0, 0]\n"
    )
    lead = findings_of(text)[0]
    assert lead.category == "per_process_visible_devices"
    assert "local_device_ids=[0]" in lead.fix


def test_deepspeeds_mpi_local_rank_past_a_machines_gpus_is_a_shared_hostname() -> None:
    text = (
        "Two VMs from one image, 8 GPUs each: mpirun -np 16 -H 10.1.0.4:8,10.1.0.5:8 python t.py\n"
        "[comm.py:718:mpi_discovery] Discovered MPI settings of world_rank=11, local_rank=11, "
        "world_size=16, master_addr=10.1.0.4, master_port=29500\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "host_identity"
    # a local rank within one machine's GPUs says nothing of host names
    fits = text.replace("world_rank=11, local_rank=11", "world_rank=11, local_rank=3")
    assert findings_of(fits)[0].category != "host_identity"


def test_a_hip_list_past_the_gpus_rocr_leaves_selects_nothing() -> None:
    text = (
        "MI210 x4, ranks meant for GPUs 2 and 3:\n\n    export ROCR_VISIBLE_DEVICES=2,3\n"
        "    export HIP_VISIBLE_DEVICES=2,3\n"
        "    torchrun --nproc_per_node=2 train.py\n\nRuntimeError: HIP error: invalid device "
        "ordinal\n"
    )
    lead = findings_of(text)[0]
    assert lead.category == "visible_devices_mismatch"
    assert "ROCR is applied first" in lead.detail
    assert "physical index" not in lead.detail
    # HIP indices within ROCR's list: no such finding
    fits = text.replace("HIP_VISIBLE_DEVICES=2,3", "HIP_VISIBLE_DEVICES=0,1")
    assert not any("ROCR is applied first" in f.detail for f in findings_of(fits))


# --- review 60 (logs with flags) -------------------------------------------------------------


def _with_flags(tmp_path, log: str, **kwargs: object) -> list:
    import io
    from pathlib import Path

    from rankmap.adapters.local import explain_files

    path = tmp_path / "job.log"
    path.write_text(log)
    report = explain_files([Path(path)], stdin=io.StringIO(""), **kwargs)
    return report.ordered_findings()


def test_a_quote_of_an_option_names_the_option_not_a_line_past_the_log(tmp_path) -> None:
    log = "[rank0]: RuntimeError: No CUDA GPUs are available\n" * 2
    found = _with_flags(
        tmp_path, log, launch="torchrun --nproc_per_node 2 t.py", env={"CUDA_VISIBLE_DEVICES": ""}
    )
    quotes = [q for f in found for q in f.evidence]
    assert "--env: CUDA_VISIBLE_DEVICES=" in quotes
    assert not any(q.startswith(f"{tmp_path / 'job.log'}:3") for q in quotes)
    assert all(q.startswith(("--launch: ", "--env: ", str(tmp_path))) for q in quotes), quotes


def test_nothing_recognised_names_the_error_the_workers_stopped_with(tmp_path) -> None:
    log = (
        "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: '/data/train.jsonl'\n"
        "E0507 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: 1) "
        "local_rank: 0 (pid: 1899) of binary: /usr/bin/python\n"
    )
    found = _with_flags(tmp_path, log, launch="torchrun --nproc_per_node 4 t.py")
    assert found[0].code == "RM003"
    assert "FileNotFoundError" in found[0].detail
    assert "without an error message" not in found[0].detail
    assert "NCCL_DEBUG" not in found[0].fix


def test_the_libuv_stores_eaddrnotavail_is_a_store_on_another_machines_address(tmp_path) -> None:
    log = (
        "torch.distributed.DistNetworkError: The server socket has failed to listen on any local "
        "network address. port: 29500, useIpv6: false, code: -99, name: EADDRNOTAVAIL, message: "
        "cannot assign requested address\n"
    )
    launch = "torchrun --nnodes 2 --node_rank 0 --nproc_per_node 8 --master_addr 10.8.0.31 t.py"
    found = _with_flags(tmp_path, log, launch=launch)
    # several machines: a machine that thinks it is node rank 0 (RM907, session 17), no network
    # symptom demoted to info
    store = next(f for f in found if f.code == "RM907")
    assert "node rank" in store.fix and "free" not in store.fix
    assert store.severity.value == "error"


def test_an_engine_sharded_over_more_gpus_than_the_machine_has_is_oversubscribed(tmp_path) -> None:
    from rankmap.inventory import load_machines

    log = (
        "ValueError: The number of required GPUs exceeds the total number of available GPUs in "
        "the placement group.\n"
    )
    launch = "python -m vllm.entrypoints.openai.api_server --model m --tensor-parallel-size 8"
    found = _with_flags(tmp_path, log, launch=launch, machines=load_machines(["workstation-4gpu"]))
    assert found[0].category == "oversubscribed"
    assert "--tensor-parallel-size" in found[0].fix


# --- review 61 (a read of this session's diff) -------------------------------------------------

_DUP01 = "NCCL WARN Duplicate GPU detected : rank 0 and rank 1 both on CUDA device 7000\n"


@pytest.mark.parametrize(
    "context",
    [
        "",
        "Inside `docker run --gpus all` on an 8x A100 box nvidia-smi shows all 8 GPUs.\n",
        "Two compose services, each with device_ids: ['0'].\n",
        'srun --ntasks-per-node=2 bash -c "CUDA_VISIBLE_DEVICES=$SLURM_LOCALID python t.py"\n',
        "export CUDA_VISIBLE_DEVICES=0\ntorchrun --nproc_per_node 2 t.py\n",
    ],
)
def test_a_printed_duplicate_gpu_always_keeps_an_error(context: str) -> None:
    found = findings_of(context + _DUP01)
    assert found[0].severity.value == "error"


def test_a_container_given_every_gpu_that_shows_every_gpu_is_no_container_cause() -> None:
    text = (
        "Duplicate GPU with torchrun in the NGC container\n"
        "Started with `docker run --gpus all --ipc=host`; inside, nvidia-smi shows all 8 GPUs.\n"
        + _DUP01
    )
    assert findings_of(text)[0].category == "no_set_device"


@pytest.mark.parametrize(
    "text",
    [
        # a GPU seen idle before the run, then an unrelated failure
        "Before starting I checked nvidia-smi: GPU 2 is free.\nCUDA_VISIBLE_DEVICES=2,3 torchrun "
        "--nproc_per_node 2 t.py\nNCCL WARN Error while creating shared memory segment /dev/shm\n",
        # "avoid the wrong GPU" is no report of one
        "To avoid using the wrong GPU I always start with CUDA_VISIBLE_DEVICES=2 python t.py; "
        "the loss becomes NaN after 3 epochs.\n",
        # another run on GPU 0 that works is no sighting of this run on GPU 0
        "CUDA_VISIBLE_DEVICES=1 python t.py fails with an illegal memory access. If I instead use "
        "GPU 0 it trains for hours.\nRuntimeError: CUDA error: an illegal memory access\n",
        # a Python variable that looks like a misspelled environment variable
        "```python\ncuda_visible_device = os.environ.get('CUDA_VISIBLE_DEVICES', '')\n```\n"
        "The two-node job hangs after init_process_group.\n",
        # a typo the writer already corrected
        "I had written CUDA_VISIBLE_DEVICE=0,1 by mistake. After correcting it to "
        "CUDA_VISIBLE_DEVICES=0,1 both ranks start on the right GPUs.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB.\n",
        # two separate attempts with ROCR and with HIP, both fine
        "Attempt 1:\n\n    export ROCR_VISIBLE_DEVICES=2,3\n    python t.py\n\nAttempt 2, new "
        "shell:\n\n    export HIP_VISIBLE_DEVICES=2,3\n    python t.py\n\nBoth train, slowly.\n",
        # the run still uses memory: nothing said of the list
        "I set CUDA_VISIBLE_DEVICES=1 and the run is still using about 23 GB.\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n",
    ],
)
def test_review_61s_false_alarms_stay_quiet(text: str) -> None:
    found = findings_of(text)
    assert not any(
        f.category == "visible_devices_mismatch" and f.severity.value != "info" for f in found
    ), [(f.code, f.severity.value, f.title[:60]) for f in found]


def test_a_huge_hip_index_given_as_a_flag_does_not_crash(tmp_path) -> None:
    log = "RuntimeError: HIP error: invalid device ordinal\n"
    found = _with_flags(
        tmp_path,
        log,
        env={"ROCR_VISIBLE_DEVICES": "0", "HIP_VISIBLE_DEVICES": "9" * 5000},
    )
    assert found


def test_the_same_machine_under_two_captions_is_one_machine() -> None:
    cmd = "torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=10.9.0.1 train.py"
    text = f"On node0:\n    {cmd}\nAgain on node0, later:\n    {cmd}\n\nIt hangs.\n"
    assert not any("same node rank" in f.detail for f in findings_of(text))


def test_a_list_set_in_code_after_cuda_started_is_the_cause() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES set in my notebook has no effect\n\ncell 1:\n\n    import torch\n"
        "    torch.cuda.is_available()\n\ncell 2:\n\n    import os\n"
        '    os.environ["CUDA_VISIBLE_DEVICES"] = "2"\n    model = Net().cuda()\n\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 260.00 MiB.\n"
    )
    lead = findings_of(text)[0]
    assert lead.category == "visible_devices_mismatch"
    assert "after a call that initialised CUDA" in lead.detail


def test_a_cuda_call_inside_a_function_defined_earlier_runs_later() -> None:
    from rankmap.explain.docread import read_document

    code = (
        "```python\ndef build():\n    return Net().cuda()\n\nif __name__ == '__main__':\n"
        "    os.environ['CUDA_VISIBLE_DEVICES'] = args.gpu\n    build()\n```\n"
    )
    assert read_document(code).cvd_after_cuda == ""


# --- review 62 (negatives that look like this family) ------------------------------------------


def test_a_dual_die_amd_gpu_counts_two_devices() -> None:
    from rankmap.explain.docread import read_document

    assert read_document("System: 4x MI250X, ROCm 6.0\n").stated_gpus == 8
    assert read_document("System: 4x MI250X (8 GCDs), ROCm 6.0\n").stated_gpus == 8
    assert read_document("8x A100 server\n").stated_gpus == 8


def test_a_process_table_with_one_rank_per_gpu_is_no_pile_up_on_gpu0() -> None:
    text = (
        "4-GPU DDP on my workstation, there is an extra process on GPU 0, is that a problem?\n\n"
        "|    0   N/A  N/A      2211      G   /usr/lib/xorg/Xorg                412MiB |\n"
        "|    0   N/A  N/A     77120      C   python                           9000MiB |\n"
        "|    1   N/A  N/A     77121      C   python                           9000MiB |\n"
        "|    2   N/A  N/A     77122      C   python                           9000MiB |\n"
        "|    3   N/A  N/A     77123      C   python                           9000MiB |\n"
    )
    assert not any(
        f.category == "no_set_device" and f.severity.value != "info" for f in findings_of(text)
    )


def test_the_schedulers_wrong_gpu_model_is_no_list_that_did_not_apply() -> None:
    text = (
        "Slurm gave me the wrong GPU?? bf16 error\n"
        "CUDA_VISIBLE_DEVICES=0  hostname=gn-v100-14\n"
        "ValueError: Your setup doesn't support bf16/gpu. You need torch>=1.10, using Ampere GPU "
        "with cuda>=11.0\n"
    )
    assert not any("did not reach the process" in f.detail for f in findings_of(text))


def test_a_fractional_ray_gpu_beside_a_shared_gpu_is_more_processes_than_gpus() -> None:
    text = (
        "Ray actors for RL learners\n\n```python\n@ray.remote(num_gpus=0.5)\nclass Learner:\n"
        "    pass\n```\n\nNCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
        "device 3b000\n"
    )
    found = findings_of(text)
    assert found[0].category == "oversubscribed"
    assert any("fractional" in f.detail for f in found[:1])
