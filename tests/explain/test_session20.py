"""Session 20: shapes written here, restating what the b21-b29 dev parts showed in our own words."""

from __future__ import annotations

import io
from pathlib import Path

from paste_findings import findings_of

from rankmap.adapters.local import explain_files

_ORDINAL = (
    "Traceback (most recent call last):\n"
    '  File "demo.py", line 9, in <module>\n'
    '    net = Net().to("cuda:1")\n'
    "RuntimeError: CUDA error: invalid device ordinal\n"
)


def _log_findings(text: str, launch: str | None = None) -> list:
    report = explain_files([Path("-")], stdin=io.StringIO(text), launch=launch)
    return report.ordered_findings()


# --- one program past the device count is no oversubscription ------------------------------------


def test_one_program_asking_for_a_missing_gpu_is_not_more_processes_than_gpus() -> None:
    text = (
        "# invalid device ordinal on my laptop\n\nI just run python demo.py and get:\n" + _ORDINAL
    )
    first, *rest = findings_of(text)
    assert first.code == "RM046"
    assert first.category == "other"
    assert first.severity.value == "error"  # the failure is printed: certain
    assert "RM102" in [f.code for f in rest]  # several processes stay a possibility, at info
    assert all(f.severity.value == "info" for f in rest)


def test_a_plain_python_launch_given_as_a_flag_is_one_program() -> None:
    assert _log_findings(_ORDINAL, launch="python demo.py")[0].code == "RM046"


def test_a_launcher_of_several_processes_keeps_the_oversubscription_reading() -> None:
    first = _log_findings(_ORDINAL, launch="torchrun --nproc_per_node 4 demo.py")[0]
    assert first.code == "RM102"
    assert first.category == "oversubscribed"


_TOLD = "# invalid ordinal\n\nI just run python demo.py on my workstation and get:\n"


def test_ranks_in_the_log_make_it_a_job_of_several_processes() -> None:
    assert findings_of(_TOLD + _ORDINAL)[0].code == "RM046"  # the same words without the rank
    text = _TOLD + "[rank3]: RuntimeError: CUDA error: invalid device ordinal\n"
    assert findings_of(text)[0].code != "RM046"


def test_a_job_started_from_a_script_the_paste_does_not_show_is_not_one_program() -> None:
    text = "After `bash scripts/train_8gpu.sh` I get\n" + _ORDINAL
    assert findings_of(text)[0].code == "RM102"  # how many processes the script starts: unknown


def test_a_multiprocessing_child_header_tells_several_processes() -> None:
    text = _TOLD + "Process SpawnProcess-2:\n" + _ORDINAL
    assert findings_of(text)[0].code != "RM046"


def test_torch_spawns_report_of_a_failed_child_tells_several_processes() -> None:
    text = _TOLD + "-- Process 1 terminated with the following error:\n" + _ORDINAL
    assert findings_of(text)[0].code != "RM046"


def test_two_processes_printing_one_error_at_once_tell_several_processes() -> None:
    text = _TOLD + "RuntimeErrorRuntimeError: CUDA error: invalid device ordinal: CUDA error\n"
    assert findings_of(text)[0].code != "RM046"


def test_sourcing_an_environment_script_is_no_launch() -> None:
    text = "source /opt/conda/etc/profile.d/conda.sh\npython demo.py\n" + _ORDINAL
    assert findings_of(text)[0].code == "RM046"


def test_a_bare_error_line_says_nothing_of_the_processes() -> None:
    # the launch is often all that shows a job's size: a log alone keeps the undecided reading
    assert findings_of("RuntimeError: CUDA error: invalid device ordinal\n")[0].code == "RM102"


def test_a_framework_with_a_worker_per_gpu_is_no_one_program() -> None:
    text = (
        "# invalid ordinal\n\nMy Ray actor loads the model on its GPU and then fails:\n" + _ORDINAL
    )
    assert findings_of(text)[0].code != "RM046"


def test_one_programs_ordinal_beside_a_visible_list_is_the_list() -> None:
    # a list that hides the index the program asks for is a cause of one program too
    text = (
        "# invalid ordinal\n\nI set the variable so that the job only uses the second card:\n"
        "$ CUDA_VISIBLE_DEVICES=1 python demo.py\n" + _ORDINAL
    )
    assert findings_of(text)[0].category == "visible_devices_mismatch"


# --- a failure on GPUs that no rule reads is a weak guess, not "nothing recognised" ---------------


def test_a_gpu_failure_no_rule_reads_gets_a_weak_guess_with_the_checks() -> None:
    text = (
        "# Training crashes on our 4-GPU server\n\n"
        "Since last week the run stops after a few minutes on the GPUs with an error and I "
        "cannot tell why; it does not work anymore.\n"
    )
    first, *rest = findings_of(text)
    assert (first.code, first.category, first.severity.value) == ("RM045", "other", "info")
    assert "nvidia-smi" in first.detail and "LOCAL_RANK" in first.detail
    assert not rest


def test_a_failure_without_gpus_stays_nothing_recognised() -> None:
    text = (
        "# The parser crashes\n\nReading the config file fails with an error, it does not work.\n"
    )
    assert findings_of(text)[0].code == "RM003"


def test_a_gpu_question_without_a_failure_stays_nothing_recognised() -> None:
    text = "# Which GPU should I buy?\n\nWe plan a workstation with two GPUs for fine-tuning.\n"
    assert findings_of(text)[0].code == "RM003"


def test_an_oom_told_in_a_title_is_no_unplaced_gpu_failure() -> None:
    text = (
        "# CUDA_ERROR_OUT_OF_MEMORY: out of memory\n\n"
        "I got a memory error when I ran the code on my GPU at home. How can I fix the error?\n"
    )
    assert findings_of(text)[0].code == "RM003"


def test_a_gpu_failure_outside_the_family_keeps_its_own_explanation() -> None:
    text = (
        "# training on two GPU servers stops\n\nThe job on our GPUs fails at start-up, it does "
        "not work:\nConnectionRefusedError: [Errno 111] Connection refused\n"
    )
    first = findings_of(text)[0]
    assert first.code == "RM003"
    assert "Connection refused" in first.detail  # the outside failure is named, not guessed at


# --- review 74 ------------------------------------------------------------------------------------


def test_a_container_given_two_host_gpus_explains_a_host_index_asked_inside_it() -> None:
    text = (
        "# works on the host, not in the container\n\n"
        "On the host I run the server with --gpu 5 and it works. In docker it does not:\n"
        "$ docker run --gpus '\"device=4,5\"' srv:1 python /srv/main.py --gpu 5\n" + _ORDINAL
    )
    first, *rest = findings_of(text)
    assert (first.category, first.severity.value) == ("container_mapping", "error")
    assert "RM046" in [f.code for f in rest]  # the failure itself follows, no longer the lead


def test_a_bare_cuda_device_after_set_device_of_the_rank_is_no_missing_set_device() -> None:
    text = (
        "# spawned workers fail\n\n"
        "```python\n"
        "def work(rank):\n"
        "    torch.cuda.set_device(rank)\n"
        "    x = torch.ones(1, device='cuda')\n\n"
        "mp.spawn(work, nprocs=4)\n"
        "```\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert all(
        f.category != "no_set_device" or f.severity.value == "info" for f in findings_of(text)
    )


def test_workers_the_pasted_code_spawns_past_the_stated_gpus_are_too_many_processes() -> None:
    text = (
        "# spawn fails on a 2-GPU machine\n\nThe box has 2 GPUs. I start it with\n\n"
        "$ python run.py\n\n"
        "```python\n"
        "WORKERS = 4\n\n"
        "def work(rank):\n"
        "    torch.cuda.set_device(rank)\n"
        "    dist.init_process_group('nccl', rank=rank, world_size=WORKERS)\n\n"
        "if __name__ == '__main__':\n"
        "    mp.spawn(work, nprocs=WORKERS)\n"
        "```\n"
        "RuntimeError: CUDA error: invalid device ordinal\n"
    )
    assert findings_of(text)[0].category == "oversubscribed"


def test_spawned_workers_that_fit_the_gpus_are_no_oversubscription() -> None:
    text = (
        "# spawn fails on an 8-GPU machine\n\nThe box has 8 GPUs. I start it with\n\n"
        "$ python run.py\n\n"
        "```python\n"
        "def work(rank):\n"
        "    torch.cuda.set_device(rank)\n\n"
        "mp.spawn(work, nprocs=2)\n"
        "```\n"
        "RuntimeError: NCCL error: unhandled system error\n"
    )
    assert all(
        f.category != "oversubscribed" or f.severity.value == "info" for f in findings_of(text)
    )


def test_machines_taken_for_one_host_leave_no_oversubscription_error_beside_them() -> None:
    lines = [
        f"localhost:{pid}:{pid + 50} [{r % 2}] NCCL INFO comm 0x{r}a rank {r} nranks 4 cudaDev {r % 2} "
        f"nvmlDev {r % 2} busId {r % 2 + 1}000 commId 0x77 - Init START"
        for r, pid in ((0, 900), (1, 901), (2, 300), (3, 301))
    ]
    text = (
        "# Duplicate GPU across our two servers\n\n"
        "Both servers were installed from one disk image: both report the hostname localhost and "
        "the same machine-id. torchrun --nnodes=2 --nproc_per_node=2 on each.\n\n"
        + "\n".join(lines)
        + "\nlocalhost:300:350 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 "
        "both on CUDA device 1000\n"
    )
    first, *rest = findings_of(text)
    assert first.category == "host_identity"
    assert all(f.severity.value == "info" for f in rest if f.category == "oversubscribed")


def test_a_long_caption_still_names_the_node_of_the_command_below_it() -> None:
    cmd = (
        "    torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=10.1.0.5 train.py\n"
    )
    text = (
        "# rendezvous never completes\n\n"
        "start_a.sh, on the first node (10.1.0.5):\n\n" + cmd + "\n"
        "start_b.sh, on the second node (10.1.0.6), copied from the first one without edits:\n\n"
        + cmd
        + "\n[rank0]: torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for "
        "clients. 4/8 clients joined.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "host_identity"  # duplicated node ranks, by the contract
    assert "node rank 0" in first.detail


def test_a_python_module_launch_is_no_known_one_program() -> None:
    # an inference server started as a module starts a worker per GPU of its parallel size
    launch = "python -m vllm.entrypoints.openai.api_server --tensor-parallel-size 2"
    assert _log_findings(_ORDINAL, launch=launch)[0].code == "RM102"


# --- review 75 ------------------------------------------------------------------------------------


def test_an_ib_memlock_failure_in_pods_is_no_mapping_alarm_and_names_the_limit() -> None:
    text = (
        "# Two-node training in pods fails at NCCL init\n\n"
        "Our k8s pods run a multi-node job; one node alone works.\n\n"
        "w1:31:77 [0] NCCL INFO comm 0x9 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 3b000 "
        "commId 0x41 - Init START\n"
        "w1:31:80 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr failed with error Cannot "
        "allocate memory\n"
        "torch.distributed.DistBackendError: NCCL error: unhandled system error\n"
    )
    found = findings_of(text)
    assert not [f for f in found if f.category != "other" and f.severity.value != "info"]
    assert "memlock" in found[0].fix


def test_one_host_name_with_two_socket_addresses_is_two_machines() -> None:
    text = (
        "gpu:700:700 [0] NCCL INFO NET/Socket : Using [0]eth0:10.9.0.1<0>\n"
        "gpu:700:740 [0] NCCL INFO comm 0x1 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 5e000 "
        "commId 0x9 - Init START\n"
        "gpu:300:340 [0] NCCL INFO NET/Socket : Using [0]eth0:10.9.0.2<0>\n"
        "gpu:300:340 [0] NCCL INFO comm 0x2 rank 2 nranks 4 cudaDev 0 nvmlDev 0 busId 5e000 "
        "commId 0x9 - Init START\n"
        "gpu:300:340 [0] init.cc:836 NCCL WARN Duplicate GPU detected : rank 2 and rank 0 both on "
        "CUDA device 5e000\n"
    )
    assert findings_of(text)[0].code == "RM801"


def test_two_kinds_of_address_lines_of_one_machine_are_no_second_machine() -> None:
    # the bootstrap interface and the socket transport's first interface may differ on one host
    text = (
        "gpu:700:700 [0] NCCL INFO Bootstrap : Using eth0:10.9.0.1<0>\n"
        "gpu:700:700 [0] NCCL INFO NET/Socket : Using [0]ib0:192.168.50.1<0> [1]eth0:10.9.0.1<0>\n"
        "gpu:700:740 [0] NCCL INFO comm 0x1 rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 5e000 "
        "commId 0x9 - Init START\n"
        "gpu:701:741 [1] NCCL INFO comm 0x2 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 5f000 "
        "commId 0x9 - Init START\n"
    )
    assert all(f.category != "host_identity" for f in findings_of(text))


def test_launchers_nested_in_srun_are_the_cause_not_nodes_taken_for_one_host() -> None:
    text = (
        "# srun + torchrun starts far too many processes\n\n"
        "```bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=4\n#SBATCH --gres=gpu:4\n"
        "srun torchrun --nnodes 2 --nproc_per_node 4 --rdzv_backend c10d "
        "--rdzv_endpoint $head:29500 fit.py\n```\n\n"
        "n7:500:560 [1] init.cc:705 NCCL WARN Duplicate GPU detected : rank 1 and rank 5 both on "
        "CUDA device 3b000\n"
    )
    assert findings_of(text)[0].code == "RM904"


def test_a_node_rank_both_nodes_claim_gets_the_node_rank_fix() -> None:
    cmd = "  torchrun --nnodes=2 --nproc_per_node=4 --node_rank=0 --master_addr=10.4.0.1 fit.py\n"
    text = (
        "# both nodes wait forever\n\nnode one (10.4.0.1):\n"
        + cmd
        + "node two (10.4.0.2):\n"
        + cmd
        + "torch.distributed.DistStoreError: Timed out after 1801 seconds waiting for clients. "
        "4/8 clients joined.\n"
    )
    first = findings_of(text)[0]
    assert first.category == "host_identity"
    assert "--node_rank=1" in first.fix


def test_an_apptainer_container_without_nv_that_finds_no_gpu_is_the_container() -> None:
    text = (
        "# no GPU inside the job\n\n"
        "$ srun apptainer exec /images/train.sif python fit.py\n"
        "UserWarning: CUDA initialization: Found no NVIDIA driver on your system.\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    first = findings_of(text)[0]
    assert first.category == "container_mapping"
    assert "--nv" in first.fix


def test_an_apptainer_container_with_nv_is_not_blamed_for_it() -> None:
    text = (
        "# no GPU inside the job\n\n"
        "$ srun apptainer exec --nv /images/train.sif python fit.py\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    assert "--nv" not in findings_of(text)[0].fix


# --- the read of the session's diff ---------------------------------------------------------------


def test_a_container_given_some_gpus_does_not_explain_a_duplicate_gpu() -> None:
    text = (
        "# duplicate GPU in the container\n\nI start it with docker run --gpus 2 --ipc=host img:1 "
        "bash and launch the job inside.\n"
        "c1:20:20 [0] init.cc:871 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on "
        "CUDA device 1000\n"
    )
    first = findings_of(text)[0]
    assert (first.code, first.severity.value) == ("RM103", "error")


def test_a_gpudirect_registration_error_is_not_the_memlock_limit() -> None:
    text = (
        "w1:31:80 [0] misc/ibvwrap.cc:190 NCCL WARN Call to ibv_reg_mr_iova2 failed with error Bad "
        "address\ntorch.distributed.DistBackendError: NCCL error: unhandled system error\n"
    )
    assert all("memlock" not in f.fix for f in findings_of(text))


def test_a_sharded_data_parallel_job_is_no_one_program() -> None:
    text = "# fails\n\nWe train with FSDP on 8 GPUs and after the upgrade it fails:\n" + _ORDINAL
    assert findings_of(text)[0].code == "RM102"


def test_apptainers_nv_set_in_the_environment_is_no_missing_nv() -> None:
    text = (
        "# no GPU inside the job\n\nexport APPTAINER_NV=1\n"
        "$ srun apptainer exec /images/train.sif python fit.py\n"
        "RuntimeError: No CUDA GPUs are available\n"
    )
    assert all("--nv" not in f.fix for f in findings_of(text))


def test_the_body_part_hip_is_no_gpu_word() -> None:
    text = "# app crash\n\nThe physio app for my hip crashes with an error, it does not work.\n"
    assert findings_of(text)[0].code == "RM003"


def test_a_plain_python_run_is_read_as_check_reads_a_launch() -> None:
    from rankmap.explain.docfacts import plain_python_run

    assert plain_python_run('XLA_FLAGS="--a=1 --b=2" python3 fit.py')  # a quoted assignment
    assert plain_python_run("nohup python -u fit.py")
    assert not plain_python_run("python -u -m pkg.serve --tp 2")
    assert not plain_python_run("docker run --gpus all img python fit.py")  # a container: unknown
    assert not plain_python_run("python")
