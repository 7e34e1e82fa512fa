"""Session 19: shapes written here, restating what the b21-b26 dev parts showed in our own words."""

from __future__ import annotations

import io
from pathlib import Path

from paste_findings import findings_of

from rankmap.explain import named
from rankmap.explain.docread import read_document

# --- a multi-node report that names nothing else is most often the launch's set-up ------------


def test_a_multi_node_report_with_nothing_more_leads_with_the_launchers_set_up() -> None:
    text = (
        "# Training across two nodes stops at start-up\n\n"
        "We run the same recipe on two nodes with 8 GPUs each and it never gets past the first "
        "step; one node works fine.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert first.severity.value in ("info", "warning")  # a guess: nothing decides it


def test_an_invalid_ordinal_on_a_second_node_still_names_the_global_rank() -> None:
    text = (
        "# Multi-node run fails on the second node\n\n"
        "$ torchrun --nnodes=2 --nproc_per_node=4 --node_rank=1 --master_addr=10.0.0.1 train.py\n"
        "```python\ntorch.cuda.set_device(int(os.environ['RANK']))\n```\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "global_rank_as_device"


# --- a failing job of several processes that the writer describes -------------------------------


def test_a_described_ddp_job_that_fails_gets_a_launcher_guess_instead_of_nothing() -> None:
    text = (
        "# DDP training does not start\n\n"
        "I launch it with torchrun on one machine and it crashes before the first batch, "
        "there is no clear error message.\n"
    )
    first = findings_of(text)[0]
    assert first.code != "RM003"
    assert first.category == "launcher_config"
    assert first.severity.value == "info"  # half a point is a possible cause, no alarm


def test_a_ddp_warning_without_a_failure_stays_nothing_recognised() -> None:
    text = "UserWarning: DDP found unused parameters in the forward pass of this module.\n"
    assert findings_of(text)[0].code == "RM003"


def test_the_job_log_alone_gets_no_launcher_guess() -> None:
    # torchrun's summary of a failed worker names no cause: its own error is elsewhere
    text = "E0101 api.py:869] failed (exitcode: 1) local_rank: 3 (pid: 77) of binary: python\n"
    assert findings_of(text)[0].code == "RM003"


def test_a_described_job_next_to_a_failure_outside_the_family_gets_no_launcher_guess() -> None:
    text = (
        "# torchrun job dies\n\n"
        "Launched with torchrun on 4 GPUs, it crashes after a few steps.\n\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    assert all(f.category != "launcher_config" for f in findings_of(text))


# --- a keyword argument of code is no accelerate config -----------------------------------------


def test_num_processes_as_a_keyword_argument_is_no_accelerate_config() -> None:
    code = "jax.distributed.initialize(num_processes=8, process_id=pid)\n"
    assert "accelerate-config" not in read_document(code).hits
    assert "accelerate-config" in read_document("num_processes: 8\ngpu_ids: all\n").hits


# --- the ranks of the job, where no line says which failed --------------------------------------


def test_stated_ranks_are_every_rank_the_lines_name_but_a_rank_maps() -> None:
    lines = [
        "INFO: Added key: store_based_barrier_key:1 to store for rank: 3",
        "INFO: Added key: store_based_barrier_key:1 to store for rank: 1",
        # NCCL's Init lines are a rank map, read as one elsewhere (rankmap_builder.py)
        "NCCL INFO comm 0x1 rank 2 nranks 4 cudaDev 2 busId 3000 - Init COMPLETE",
        "nranks 4 localRanks 4",
    ]
    assert named.stated_ranks(lines) == {1, 3}


def test_a_guess_names_the_ranks_of_the_job_when_no_line_names_the_failing_one() -> None:
    text = (
        "# Our 4-process job uses one GPU only\n\n"
        + "".join(f"INFO: Added key: barrier_key:1 to store for rank: {r}\n" for r in range(4))
        + "only one GPU is used, the other three stay idle\n"
    )
    first = findings_of(text)[0]
    assert first.code.endswith("45")  # a best guess: a cause of the whole job
    assert first.ranks == (0, 1, 2, 3)


def test_a_reported_failure_keeps_to_the_ranks_that_failed() -> None:
    # (no line says which rank hit the invalid ordinal: the error names none, not the job's)
    text = (
        "".join(f"INFO: Added key: barrier_key:1 to store for rank: {r}\n" for r in range(4))
        + "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    first = findings_of(text)[0]
    assert not first.code.endswith("45")
    assert first.ranks == ()


def test_the_failing_rank_wins_over_the_ranks_the_job_shows() -> None:
    text = (
        "".join(f"INFO: Added key: barrier_key:1 to store for rank: {r}\n" for r in range(4))
        + "[rank3]: RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].ranks == (3,)


# --- a line that is one call of a dotted name is code -------------------------------------------


def test_a_dotted_call_on_a_line_of_its_own_is_code_and_a_sentence_with_one_is_prose() -> None:
    from rankmap.explain.document import classify_line

    assert classify_line("jax.distributed.initialize(num_processes=8, process_id=pid)", None) == (
        "code"
    )
    assert classify_line("mp.spawn(main, args=(world,), nprocs=4)  # one per GPU", None) == "code"
    assert classify_line("I call torch.cuda.set_device(rank) first", None) == "prose"
    assert classify_line("jax.distributed.initialize() hangs forever", None) == "prose"


# --- an OOM that lists other processes is a rank pile-up only in a job of several ranks ---------

_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
    "capacity of 79.15 GiB of which 1.2 GiB is free. Process 4101 has 30.1 GiB memory in use. "
    "Process 4102 has 30.1 GiB memory in use.\n"
)


def test_an_oom_beside_other_processes_with_no_job_of_several_ranks_is_no_set_device_alarm() -> (
    None
):
    first = findings_of("# my server runs out of memory\n\n" + _OOM)[0]
    assert first.category != "no_set_device"
    assert first.severity.value != "error"


def test_an_oom_beside_other_processes_of_a_ranked_job_stays_every_rank_on_cuda0() -> None:
    first = findings_of("[rank1]: " + _OOM)[0]
    assert (first.code, first.category) == ("RM301", "no_set_device")


# --- an inference server that names no parallel size uses one GPU -------------------------------


def test_a_vllm_server_with_several_visible_gpus_and_no_tp_size_is_told_to_use_them() -> None:
    text = (
        "# vLLM uses only one of my GPUs\n\n"
        "CUDA_VISIBLE_DEVICES=0,1,2,3 python -m vllm.entrypoints.openai.api_server --model m\n\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a "
        "total capacity of 79.15 GiB of which 200 MiB is free.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "1 GPU" in first.detail or "use 1" in first.title


def test_a_vllm_server_given_its_tp_size_is_not_told_it_left_gpus_idle() -> None:
    text = (
        "# vLLM runs out of memory\n\n"
        "CUDA_VISIBLE_DEVICES=0,1 vllm serve m --tensor-parallel-size 2\n\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\n"
    )
    assert all("stay idle" not in f.detail for f in findings_of(text))


# --- DALI's reader told fewer shards than the job has ranks -------------------------------------


def test_dalis_shard_assert_is_the_readers_shard_settings() -> None:
    text = (
        "RuntimeError: Critical error in pipeline: [/opt/dali/dali/operators/reader/loader/"
        'loader.h:57] Assert on "num_shards_ > shard_id_" failed: num_shards needs to be greater '
        "than shard_id\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "num_shards" in first.fix


# --- a hang at the first collective may be a launch that never starts every rank ---------------


def test_the_hang_prior_names_the_launch_among_its_causes() -> None:
    from rankmap.explain.priors import HAND

    assert "launcher_config" in HAND["hang-at-collective"]


# --- a device a one-process program hard-codes is no pile-up of ranks ----------------------------


def test_a_fixed_device_in_a_one_process_program_is_not_every_rank_on_one_gpu() -> None:
    text = (
        "# invalid device ordinal\n\n"
        "This fails on my laptop:\n"
        "```\nimport torch\ndevice = torch.device('cuda:1')\nx = torch.ones(3).to(device)\n```\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert all(f.code != "RM302" for f in findings_of(text))
    from rankmap.adapters.local import explain_files

    report = explain_files([Path("-")], stdin=io.StringIO(text))
    assert "no_set_device" not in (report.sections["explain"].get("scores") or {})


def test_a_fixed_device_in_a_torchrun_job_is_still_every_rank_on_one_gpu() -> None:
    text = (
        "# DDP: all ranks on one GPU\n\n"
        "$ torchrun --nproc_per_node=4 train.py\n"
        "```\nimport torch\ndevice = torch.device('cuda:0')\nmodel.to(device)\n```\n"
        "torch.distributed.DistBackendError: NCCL error: invalid usage, Duplicate GPU detected : "
        "rank 1 and rank 0 both on CUDA device 1a000\n"
    )
    assert findings_of(text)[0].category == "no_set_device"


# --- "doesn't have NCCL built in": the platform first, the build on Linux ------------------------

_NO_NCCL = "RuntimeError: Distributed package doesn't have NCCL built in\n"


def test_no_nccl_with_nothing_about_the_machine_is_no_mapping_alarm() -> None:
    first = findings_of(_NO_NCCL)[0]
    assert first.category == "other"
    assert first.severity.value == "warning"
    assert "gloo" in first.fix and "CUDA build" in first.fix


def test_no_nccl_on_a_linux_machine_is_the_build() -> None:
    first = findings_of("Ubuntu 22.04, torch 2.1\n\n" + _NO_NCCL)[0]
    assert (first.category, first.severity.value) == ("version_mismatch", "error")


def test_a_windows_site_packages_path_is_a_windows_machine() -> None:
    for frame in (
        '  File "C:\\\\tools\\\\py\\\\Lib\\\\site-packages\\\\torch\\\\distributed\\\\x.py", line 9',
        '  File "D:\\venv\\lib\\site-packages\\torch\\distributed\\x.py", line 9',
    ):
        assert "windows-host" in read_document(frame + "\n" + _NO_NCCL).hits, frame
    assert "windows-host" not in read_document("/usr/lib/python3/site-packages/x.py\n").hits


# --- PyTorch's device-count assert: MIG is its likeliest cause, not a certain one ---------------

_COUNT_ASSERT = (
    "RuntimeError: device >= 0 && device < num_gpus INTERNAL ASSERT FAILED at "
    '"../aten/src/ATen/cuda/CUDAContext.cpp":50, please report a bug to PyTorch. device=1, '
    "num_gpus=\n"
)


def test_the_device_count_assert_alone_is_mig_at_warning() -> None:
    first = findings_of(_COUNT_ASSERT)[0]
    assert (first.code, first.severity.value) == ("RM640", "warning")
    assert "CUDA_VISIBLE_DEVICES" in first.detail
    # (PyTorch's own "num_gpus=" is no Ray option)
    assert "ray" not in read_document(_COUNT_ASSERT).hits
    assert "ray" in read_document("@ray.remote(num_cpus=1, num_gpus=1)\n").hits


def test_the_device_count_assert_beside_mig_instances_is_mig_at_error() -> None:
    mig = "CUDA_VISIBLE_DEVICES=MIG-4f2a6b1c-1111-2222-3333-444455556666\n"
    first = findings_of(mig + _COUNT_ASSERT)[0]
    assert (first.category, first.severity.value) == ("mig", "error")


def test_an_oom_beside_other_processes_of_a_job_the_writer_describes_is_every_rank_on_cuda0() -> (
    None
):
    text = "# DDP eval: 4 ranks, one GPU busy\n\ndeepspeed --num_gpus 4 run.py, then:\n" + _OOM
    assert findings_of(text)[0].category == "no_set_device"


# --- rows cut out of a bigger nvidia-smi table count no machine ---------------------------------


def _smi_rows(indices: list[int]) -> str:
    return "".join(
        f"|   {i}  NVIDIA A100-SXM4-80GB          On  | 00000000:{16 + i:02X}:00.0 Off |"
        "                    0 |\n"
        "| N/A   33C    P0              64W / 400W |    1620MiB / 81920MiB |      0%   Default |\n"
        for i in indices
    )


def test_a_table_of_the_first_gpus_counts_the_machine_and_a_cut_out_row_does_not() -> None:
    cut = "[rank5]: RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable\n"
    launch = "torchrun --nproc_per_node=8 train.py\n"
    assert read_document(_smi_rows([0, 1, 2, 3])).smi_gpus == 4
    assert read_document(_smi_rows([5])).smi_gpus is None
    # eight processes beside one row of GPU 5: no "8 processes on 1 GPU"
    first = findings_of(launch + cut + _smi_rows([5]))[0]
    assert "1 GPU(s)" not in first.detail


# --- JAX's process_id from a local rank --------------------------------------------------------


def test_jax_process_id_from_a_local_rank_is_the_launch_set_up() -> None:
    text = (
        "JAX on 2 nodes with srun, one task per node; the second host fails to register.\n\n"
        "```python\njax.distributed.initialize(\n    coordinator_address=addr,\n"
        '    num_processes=int(os.environ["SLURM_NNODES"]),\n'
        '    process_id=int(os.environ["SLURM_LOCALID"]),\n)\n```\n'
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "SLURM_PROCID" in first.fix
    global_id = text.replace("SLURM_LOCALID", "SLURM_PROCID")
    assert "jax-process-id-local" not in read_document(global_id).hits


# --- a list of several GPUs starts no process on them -------------------------------------------


def test_a_list_of_two_gpus_with_one_used_and_no_launcher_is_the_launch() -> None:
    text = (
        "# 多卡训练只用了一张卡\n\n"
        "我先 export CUDA_VISIBLE_DEVICES=2,3，再运行 python train.py，结果训练时只用了一个GPU。\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "--nproc_per_node 2" in first.fix


def test_the_same_symptom_under_a_launcher_is_not_this_rule() -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node=2 train.py\n"
        "we see that only one of the cards is used\n"
    )
    assert all("starts no process" not in f.detail for f in findings_of(text))


def test_one_gpu_used_in_more_spellings() -> None:
    for text in (
        "the box has four cards and only one of them is used",
        "看起来只是用了一块卡在跑",
        "只有一块卡在跑",
    ):
        assert "one-gpu-used" in read_document(text + "\n").hits, text


# --- every process alone in a world of its own, in more spellings -----------------------------


def test_ranks_all_zero_and_a_size_of_one_are_mpi_singletons() -> None:
    for text in (
        "with 4 workers all the ranks are 0",
        "every worker always reports rank 0",
        "hvd.size() is always 1",
        "comm.Get_size() returns 1",
    ):
        assert "mpi-singletons" in read_document(text + "\n").hits, text
    for text in ("all ranks are 0.5s slower", "rank 0 works, rank 1 fails"):
        assert "mpi-singletons" not in read_document(text + "\n").hits, text


# --- a launcher's option the script rejects ----------------------------------------------------


def test_a_launchers_gpus_option_after_the_script_is_the_launch() -> None:
    text = (
        "python -m paddle.distributed.launch train.py --gpus 0,1 --epochs 3\n"
        "train.py: error: unrecognized arguments: --gpus 0,1\n"
    )
    first = findings_of(text)[0]
    assert first.category == "launcher_config"
    assert "before the script" in first.fix
    assert "unrecognized-args" not in read_document("error: unrecognized arguments: --lr 3\n").hits


# --- a Mac is a host without a CUDA GPU ---------------------------------------------------------


def test_lightning_asking_for_a_gpu_on_a_mac_is_no_visible_list_problem() -> None:
    text = (
        "# trying the example on my MacBook (macOS 14)\n\n"
        "pytorch_lightning.utilities.exceptions.MisconfigurationException:\n"
        "    You requested GPUs: [0]\n    But your machine only has: []\n"
    )
    first = findings_of(text)[0]
    assert first.category == "other"
    assert "Mac" in first.fix
    linux = text.replace("my MacBook (macOS 14)", "our Linux box")
    assert findings_of(linux)[0].category != "other"


# --- an Ascend NPU job is read in its own stack's terms ----------------------------------------


def test_an_ascend_npu_failure_is_not_read_as_a_cuda_list() -> None:
    text = (
        "# vllm-ascend fails at start on the 910B\n\n"
        "export ASCEND_RT_VISIBLE_DEVICES=0,1\n"
        "AssertionError: Invalid device id\n"
    )
    first = findings_of(text)[0]
    assert first.category == "other"
    assert "torch.npu.set_device" in first.fix
    cuda = "export CUDA_VISIBLE_DEVICES=0,1\nAssertionError: Invalid device id\n"
    assert findings_of(cuda)[0].category != "other"


def test_the_other_gpus_idle_is_one_gpu_used() -> None:
    for text in (
        "in my 4-GPU run only one GPU does any work",
        "GPU 0 trains while gpu:2 to gpu:7 does nothing",
        "the other 3 GPUs stay idle",
    ):
        assert "one-gpu-used" in read_document(text + "\n").hits, text
    assert "one-gpu-used" not in read_document("the other processes are idle\n").hits


# --- the review of this session's change (each shape a problem it proved) -----------------------


def test_a_launch_of_one_process_is_no_job_of_several_ranks_for_the_oom_rule() -> None:
    from rankmap.adapters.local import explain_files

    report = explain_files(
        [Path("-")],
        stdin=io.StringIO(_OOM),
        launch="torchrun --nproc_per_node=1 train.py",
    )
    assert report.findings[0].code != "RM301"
    assert findings_of("[rank0]: " + _OOM)[0].code != "RM301"  # one rank named: one process


def test_no_nccl_with_linux_and_another_platform_named_is_not_the_linux_build() -> None:
    for other in ("on my MacBook (macOS 14)", "on my Windows laptop"):
        text = f"It works on our Linux server, but {other} I get:\n" + _NO_NCCL
        assert findings_of(text)[0].category != "version_mismatch", other


def test_a_linux_home_path_in_a_traceback_is_a_linux_machine() -> None:
    frame = (
        '  File "/home/ana/venvs/t/lib/python3.10/site-packages/torch/distributed/x.py", line 9\n'
    )
    first = findings_of(frame + _NO_NCCL)[0]
    assert (first.category, first.severity.value) == ("version_mismatch", "error")


def test_a_size_guard_in_code_is_no_world_of_one() -> None:
    assert "mpi-singletons" not in read_document("if hvd.size() == 1:\n    return\n").hits


def test_the_list_rule_steps_aside_for_launchers_and_one_process_multi_gpu_code() -> None:
    cases = (
        "python -m paddle.distributed.launch --gpus 0,1 train.py\n"
        "export CUDA_VISIBLE_DEVICES=0,1\nonly one GPU is used\n",
        "export CUDA_VISIBLE_DEVICES=0,1\nstrategy = tf.distribute.MirroredStrategy()\n"
        "only one GPU is used\n",
        "export CUDA_VISIBLE_DEVICES=0,1\nmodel = nn.DataParallel(model)\nonly one GPU is used\n",
    )
    for text in cases:
        assert all("starts no process" not in f.detail for f in findings_of(text)), text


def test_the_list_rule_reads_the_last_list_set() -> None:
    last_one = (
        "export CUDA_VISIBLE_DEVICES=0,1,2,3\n"
        "```python\nos.environ['CUDA_VISIBLE_DEVICES'] = '5'\n```\nonly one GPU is used\n"
    )
    assert read_document(last_one).visible_lists == ["0,1,2,3", "5"]
    assert all("starts no process" not in f.detail for f in findings_of(last_one))


def test_the_device_count_assert_beside_mig_told_in_the_paste_is_an_error() -> None:
    for told in ("The A100s have MIG mode enabled.\n", "resources:\n  nvidia.com/mig-3g.20gb: 2\n"):
        first = findings_of(told + _COUNT_ASSERT)[0]
        assert (first.category, first.severity.value) == ("mig", "error"), told


def test_the_device_count_assert_alone_does_not_title_itself_mig() -> None:
    first = findings_of(_COUNT_ASSERT)[0]
    assert "sees only MIG" not in first.title


def test_jax_process_id_that_is_global_or_on_one_machine_is_fine() -> None:
    code = "```python\njax.distributed.initialize(num_processes=8,\n    process_id={pid})\n```\n"
    several = "JAX on 2 nodes with srun -N2.\n\n"
    assert (
        "jax-process-id-local" not in read_document(code.format(pid="node * 4 + local_rank")).hits
    )
    one = findings_of(code.format(pid="local_rank") + "one machine, 8 GPUs\n")
    assert all("repeats on every node" not in f.detail for f in one)
    two = findings_of(several + code.format(pid="local_rank"))
    assert two[0].category == "launcher_config"


def test_a_parallel_size_the_command_names_in_a_form_not_read_is_no_default() -> None:
    for cmd in ("vllm serve m --tensor-parallel-size=$TP", "vllm serve m --config cfg.yaml"):
        assert read_document(f"CUDA_VISIBLE_DEVICES=0,1,2,3 {cmd}\n").parallel_visible == [], cmd


def test_rays_num_gpus_as_a_name_is_ray_and_pytorchs_assert_with_two_digits_is_not() -> None:
    assert "ray" in read_document("ray.init(num_gpus=n_gpus)\n").hits
    assert "ray" not in read_document("device=10, num_gpus=8\n").hits


def test_a_fixed_device_beside_a_rank_map_of_several_ranks_is_every_ranks() -> None:
    text = (
        '```python\ndevice = torch.device("cuda:0")\nmodel.to(device)\n```\n'
        "box:11:11 [0] NCCL INFO comm 0x5 rank 0 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
        "box:12:12 [0] NCCL INFO comm 0x6 rank 1 nranks 2 cudaDev 0 busId 1000 - Init COMPLETE\n"
    )
    assert findings_of(text)[0].code == "RM302"


def test_a_described_job_beside_an_outside_failure_scores_no_launcher_prior() -> None:
    from rankmap.adapters.local import explain_files

    text = (
        "# torchrun job dies\n\nLaunched with torchrun on 4 GPUs; NCCL fails after a few steps.\n\n"
        "torch.distributed.DistBackendError: NCCL error: unhandled system error\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    report = explain_files([Path("-")], stdin=io.StringIO(text))
    assert "launcher_config" not in (report.sections["explain"].get("scores") or {})
