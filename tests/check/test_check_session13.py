"""Session 13: ``python -m pkg.train`` is one process whose script is the module's file."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.errors import UsageError
from rankmap.inventory import load_machine

ONE_GPU_PER_RANK = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _check(  # type: ignore[no-untyped-def]
    tmp_path: Path, argv: list[str], *, machine: str = "workstation-4gpu", nodes: int | None = None
):
    return check_launch(
        argv,
        machines=load_machine(machine),
        env={},
        nodes=nodes,
        cwd=tmp_path,
        files=LocalFiles(),
    )


def test_a_module_run_by_python_is_one_process_reading_the_modules_file(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(ONE_GPU_PER_RANK)
    report = _check(tmp_path, ["python", "-m", "pkg.train", "--epochs", "3"])
    launch = report.sections["launch"]
    assert (launch["launcher"], launch["world_size"], launch["module"]) == (
        "python",
        1,
        "pkg.train",
    )
    # the module's file was read (no "no training script read" assumption)
    assert launch["script"] == "pkg/train.py"
    assert launch["device_selection"] != "assumed_local_rank"
    assert "RM005" not in {f.code for f in report.ordered_findings()}


def test_other_modules_of_a_launcher_package_stay_an_unknown_launcher(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown launcher"):
        _check(tmp_path, ["python", "-m", "torch.distributed.elastic.agent"])


MASTER_BRANCH = (
    "import os, torch, torch.distributed as dist\n"
    "if 'MASTER_ADDR' in os.environ and 'MASTER_PORT' in os.environ:\n"
    "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "    dist.init_process_group('nccl')\n"
)


@pytest.mark.parametrize(
    "argv",
    [
        ["torchrun", "--nproc-per-node", "4", "train.py"],
        ["deepspeed", "train.py"],
        ["accelerate", "launch", "--multi_gpu", "--num_processes", "4", "train.py"],
    ],
)
def test_launchers_give_every_worker_the_store_address(tmp_path: Path, argv: list[str]) -> None:
    # review 30: a script that checks MASTER_ADDR/MASTER_PORT took its "not distributed" branch
    (tmp_path / "train.py").write_text(MASTER_BRANCH)
    report = _check(tmp_path, argv)
    assert report.sections["launch"]["device_selection"] == "local_rank"
    assert report.verdict == "ok", [f.code for f in report.findings]


def _shell(tmp_path: Path, text: str):  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(ONE_GPU_PER_RANK)
    (tmp_path / "run.sh").write_text(text)
    return _check(tmp_path, ["bash", "run.sh"])


def test_a_quoted_string_over_several_lines_is_one_word(tmp_path: Path) -> None:
    # review 30: the common multi-line DISTRIBUTED_ARGS block and usage texts stopped the reader
    report = _shell(
        tmp_path,
        "usage() {\n  echo '\n# Usage: run.sh [-m MODEL]\n'\n}\n"
        'ARGS="\n    --nproc_per_node 4 \\\n    --nnodes 1\n"\n'
        "torchrun $ARGS train.py  # launch\n",
    )
    launch = report.sections["launch"]
    assert (launch["launcher"], launch["world_size"]) == ("torchrun", 4)


def test_a_quote_never_closed_is_still_bad_input(tmp_path: Path) -> None:
    from rankmap.errors import InputError

    with pytest.raises(InputError, match="run.sh:1: cannot read shell line"):
        _shell(tmp_path, 'ARGS="--nproc_per_node 4\ntorchrun $ARGS train.py\n')


def test_a_hash_inside_a_word_starts_no_comment(tmp_path: Path) -> None:
    report = _shell(tmp_path, "N=4\ntorchrun --nproc_per_node ${N} train.py --tag a#b # note\n")
    launch = report.sections["launch"]
    assert launch["world_size"] == 4
    assert launch["argv"][-2:] == ["--tag", "a#b"], launch["argv"]


DEEPSPEED_SCRIPT = (
    "import deepspeed, torch\n"
    "deepspeed.init_distributed()\n"
    "model = torch.nn.Linear(2, 2)\n"
    "engine, *_ = deepspeed.initialize(model=model, config='ds.json')\n"
)


def test_deepspeed_under_srun_discovers_its_local_rank_itself(tmp_path: Path) -> None:
    # review 30: RM903 "srun does not set LOCAL_RANK" for a DeepSpeed script, which finds its
    # ranks through MPI (mpi4py) when no launcher variable is set
    (tmp_path / "train.py").write_text(DEEPSPEED_SCRIPT)
    report = _check(tmp_path, ["srun", "--ntasks-per-node=4", "python", "train.py"])
    assert not [f for f in report.findings if f.severity.value == "error"], [
        f.code for f in report.findings
    ]


TENSOR_ONLY = (
    "import os, torch, torch.distributed as dist\n"
    "dist.init_process_group('nccl')\n"
    "device = torch.device('cuda', int(os.environ['LOCAL_RANK']))\n"
    "model = torch.nn.Linear(2, 2).to(device)\n"
)


def test_tensor_only_devices_warn_only_where_a_rank_is_off_cuda0(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TENSOR_ONLY)
    four = _check(tmp_path, ["torchrun", "--nproc-per-node", "4", "train.py"])
    rm330 = [f for f in four.findings if f.code == "RM330"]
    assert rm330 and rm330[0].ranks == (1, 2, 3)
    # review 30: one process per node uses cuda:0, the current device it keeps
    one = _check(tmp_path, ["torchrun", "--nproc-per-node", "1", "train.py"])
    assert not [f for f in one.findings if f.code == "RM330"]


def test_a_profiler_before_the_launcher_runs_the_launch(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(ONE_GPU_PER_RANK)
    argv = ["nsys", "profile", "-o", "run", "--trace", "cuda,nvtx", "torchrun"]
    report = _check(tmp_path, [*argv, "--nproc-per-node", "4", "train.py"])
    assert report.sections["launch"]["world_size"] == 4


# review 34: launch scripts read with their control flow (shapes written here)
def _script(  # type: ignore[no-untyped-def]
    tmp_path: Path, text: str, nodes: int | None = None, program: str = ONE_GPU_PER_RANK
):
    (tmp_path / "train.py").write_text(program)
    (tmp_path / "job.sh").write_text(text)
    return _check(tmp_path, ["bash", "job.sh"], machine="dgx-h100", nodes=nodes)


def _errors(report) -> list[str]:  # type: ignore[no-untyped-def]
    return [f.code for f in report.findings if f.severity.value == "error"]


@pytest.mark.parametrize(
    "text",
    [
        # two branches of an if never run at once
        'if [ "$1" = a ]; then\n  CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node=4 '
        "train.py &\nelse\n  CUDA_VISIBLE_DEVICES=4,5,6,7 torchrun --nproc_per_node=4 train.py &"
        "\nfi\nwait\n",
        # a wait between two background launches orders them
        "torchrun --nproc_per_node=4 train.py &\nwait\ntorchrun --nproc_per_node=4 train.py &\n"
        "wait\n",
        # a function nobody calls changes nothing
        "one_gpu() {\n  export CUDA_VISIBLE_DEVICES=0\n}\ntorchrun --nproc_per_node=8 train.py\n",
        # lines below exit never run
        "torchrun --nproc_per_node=8 train.py\nexit 0\ntorchrun --nproc_per_node=16 train.py\n",
    ],
)
def test_control_flow_that_keeps_a_defect_from_running_is_no_error(
    tmp_path: Path, text: str
) -> None:
    assert _errors(_script(tmp_path, text)) == []


def test_a_function_runs_where_it_is_called_with_its_arguments(tmp_path: Path) -> None:
    text = (
        "go() {\n  local n=$1\n  CUDA_VISIBLE_DEVICES=$2 torchrun --nproc_per_node=$n train.py\n"
        "}\ngo 4 0,1\n"
    )
    assert _errors(_script(tmp_path, text)) == ["RM201"]
    one_line = "go() { torchrun --nproc_per_node=8 train.py; }\ngo\n"
    assert _script(tmp_path, one_line).sections["launch"]["world_size"] == 8


def test_separate_jobs_sharing_a_gpu_are_a_warning(tmp_path: Path) -> None:
    text = "for s in 1 2 3; do\n  CUDA_VISIBLE_DEVICES=0 python train.py --seed $s &\ndone\nwait\n"
    report = _script(tmp_path, text, program="import torch\nx = torch.zeros(1).cuda()\n")
    shared = [f for f in report.findings if f.code == "RM503"]
    assert shared and shared[0].severity.value == "warning"


def test_slurm_nodeid_expanded_by_the_batch_shell_is_node_rank_0_everywhere(
    tmp_path: Path,
) -> None:
    text = (
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
        "srun torchrun --nnodes=2 --nproc_per_node=8 --node_rank=$SLURM_NODEID "
        "--master_addr=n1 --master_port=29400 train.py\n"
    )
    report = _script(tmp_path, text, nodes=2)
    assert "RM804" in _errors(report)
    quoted = text.replace(
        "srun torchrun --nnodes=2 --nproc_per_node=8 --node_rank=$SLURM_NODEID "
        "--master_addr=n1 --master_port=29400 train.py",
        "srun bash -c 'torchrun --nnodes=2 --nproc_per_node=8 --node_rank=$SLURM_NODEID "
        "--master_addr=n1 --master_port=29400 train.py'",
    )
    assert _errors(_script(tmp_path, quoted, nodes=2)) == []


def test_a_count_the_script_computes_gets_a_stand_in_and_an_info(tmp_path: Path) -> None:
    text = (
        "NGPU=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)\n"
        "torchrun --nproc_per_node=$NGPU train.py\n"
    )
    report = _script(tmp_path, text)
    assert report.sections["launch"]["world_size"] == 8
    assert [f.severity.value for f in report.findings if f.code == "RM032"] == ["info"]


def test_deepspeed_under_per_task_binding_indexes_its_local_rank(tmp_path: Path) -> None:
    # review 35: DeepSpeed's MPI discovery exports the host-local index as LOCAL_RANK and the
    # engine selects it; a task that sees one GPU has no cuda:1
    (tmp_path / "train.py").write_text(DEEPSPEED_SCRIPT)
    report = _check(
        tmp_path, ["srun", "--ntasks-per-node=4", "--gpus-per-task=1", "python", "train.py"]
    )
    assert "RM501" in _errors(report)


def test_a_comment_holding_a_quote_hides_no_line(tmp_path: Path) -> None:
    text = (
        "export A=1 #user's var\ntorchrun --nproc_per_node 4 train.py #don't touch\necho #it's ok\n"
    )
    assert _script(tmp_path, text).sections["launch"]["world_size"] == 4


def test_other_frameworks_launcher_modules_stay_unknown(tmp_path: Path) -> None:
    for module in ("paddle.distributed.launch", "oneflow.distributed.launch", "lightning"):
        with pytest.raises(UsageError, match="unknown launcher"):
            _check(tmp_path, ["python", "-m", module, "--gpus", "0,1", "train.py"])


def test_a_rendezvous_endpoint_without_port_gives_no_port_as_master_address() -> None:
    from rankmap.launchers.torchrun import endpoint

    assert endpoint("node1") == ("node1", None)
    assert endpoint("node1:29400") == ("node1", "29400")
    assert endpoint("[fe80::1]:29400") == ("fe80::1", "29400")
    assert endpoint("fe80::1") == ("fe80::1", None)


# review 38: the shell reader's control flow, as bash runs it (shapes written here)
@pytest.mark.parametrize(
    ("text", "world"),
    [
        ("cd /workspace || exit 1\ntorchrun --nproc_per_node 8 train.py\n", 8),
        (
            '[ -f train.py ] || { echo "missing"; exit 1; }\ntorchrun --nproc_per_node 8 train.py\n',
            8,
        ),
        ('echo "{" > ds.json\necho "}" >> ds.json\ntorchrun --nproc_per_node 8 train.py\n', 8),
        ("function go {\n  torchrun --nproc_per_node $1 train.py\n}\ngo 4\n", 4),
        ("function go() {\n  torchrun --nproc_per_node $1 train.py\n}\ngo 4\n", 4),
        ("go()\n{\n  torchrun --nproc_per_node $1 train.py\n}\ngo 4\n", 4),
        (
            "go() {\n  {\n    echo start\n  } >> run.log\n  torchrun --nproc_per_node $1 train.py\n}\ngo 4\n",
            4,
        ),
        (
            "python - <<EOF\nfor i in range(2):\n    print(i)\nEOF\ntorchrun --nproc_per_node 8 train.py\n",
            8,
        ),
        (
            "cat > notes.txt <<'EOF'\nBob's run\nexit\nEOF\ntorchrun --nproc_per_node 8 train.py\n",
            8,
        ),
        ("# see the README \\\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ('if [ -n "$X" ]; then\n  N=4\n  torchrun --nproc_per_node $N train.py\nfi\n', 4),
    ],
)
def test_the_shell_reader_follows_the_script_as_bash_runs_it(
    tmp_path: Path, text: str, world: int
) -> None:
    report = _script(tmp_path, text)
    assert report.sections["launch"]["world_size"] == world
    assert _errors(report) == []


@pytest.mark.parametrize(
    "text",
    [
        # case branches are alternatives
        'case "$MODE" in\n  small)\n    torchrun --nproc_per_node 4 train.py &\n    ;;\n'
        "  large)\n    torchrun --nproc_per_node 8 train.py &\n    ;;\nesac\nwait\n",
        # wait $PID waits
        "torchrun --nproc_per_node 4 prep.py &\nPREP=$!\nwait $PREP\n"
        "torchrun --nproc_per_node 8 train.py &\nwait\n",
    ],
)
def test_alternatives_and_waits_never_run_two_launches_at_once(tmp_path: Path, text: str) -> None:
    report = _script(tmp_path, text)
    assert _errors(report) == []
    assert not [f for f in report.findings if f.code == "RM503"]


def test_a_port_clash_of_an_earlier_job_is_still_said(tmp_path: Path) -> None:
    text = (
        "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 2 --master_port 29500 a.py &\n"
        "CUDA_VISIBLE_DEVICES=2,3 torchrun --nproc_per_node 2 --master_port 29500 b.py &\n"
        "wait\ntorchrun --nproc_per_node 8 train.py\n"
    )
    assert "RM906" in _errors(_script(tmp_path, text))


def test_a_helper_program_next_to_the_job_is_no_shared_gpu(tmp_path: Path) -> None:
    report = _script(tmp_path, "python log_gpu_usage.py &\ntorchrun --nproc_per_node 8 train.py\n")
    assert not [f for f in report.findings if f.code == "RM503"]


def test_a_fixed_node_rank_under_srun_is_no_error_with_the_c10d_rendezvous(tmp_path: Path) -> None:
    head = (
        "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\n#SBATCH --gpus-per-node=8\n"
    )
    launch = (
        "srun torchrun --nnodes 2 --nproc_per_node 8 --node_rank $SLURM_NODEID "
        "--rdzv_backend c10d --rdzv_endpoint n1:29400 train.py\n"
    )
    assert _errors(_script(tmp_path, head + launch, nodes=2)) == []


def test_a_script_too_large_to_follow_is_refused_in_one_line(tmp_path: Path) -> None:
    from rankmap.errors import InputError

    text = (
        "inner() { for j in $(seq 1 2000); do echo $j; done; }\n"
        "for i in $(seq 1 2000); do inner; done\ntorchrun --nproc_per_node 8 train.py\n"
    )
    with pytest.raises(InputError, match="too much to simulate"):
        _script(tmp_path, text)
    recursive = (
        "f() { for i in $(seq 1 3); do f; done; }\nf\ntorchrun --nproc_per_node 8 train.py\n"
    )
    assert _script(tmp_path, recursive).sections["launch"]["world_size"] == 8


# review 37: shapes of fresh real projects, restated
def test_a_remainder_spelled_out_is_the_local_rank(tmp_path: Path) -> None:
    program = (
        "import os, torch, torch.distributed as dist\n"
        "rank = int(os.environ['SLURM_PROCID'])\ng = 8\n"
        "dist.init_process_group('nccl')\n"
        "torch.cuda.set_device(rank - g * (rank // g))\n"
    )
    srun = ["srun", "--nodes", "2", "--ntasks-per-node", "8", "python", "train.py"]
    (tmp_path / "train.py").write_text(program)
    report = _check(tmp_path, srun, machine="dgx-h100", nodes=2)
    assert _errors(report) == []
    spelled_global = program.replace("rank - g * (rank // g)", "rank")
    (tmp_path / "train.py").write_text(spelled_global)
    report = _check(tmp_path, srun, machine="dgx-h100", nodes=2)
    assert "RM401" in _errors(report) or "RM102" in _errors(report)


def test_an_except_blocks_device_is_the_fallback_not_the_choice(tmp_path: Path) -> None:
    program = (
        "import os, torch, torch.distributed as dist\n"
        "device = 'cuda:' + os.environ['LOCAL_RANK']\n"
        "try:\n    _, idx = device.split(':')\n    torch.cuda.set_device(int(idx))\n"
        "except ValueError:\n    torch.cuda.set_device(0)\n"
        "dist.init_process_group('nccl')\n"
    )
    (tmp_path / "train.py").write_text(program)
    assert _errors(_check(tmp_path, ["torchrun", "--nproc-per-node", "4", "train.py"])) == []


def test_an_empty_variable_before_the_launcher_leaves_no_word(tmp_path: Path) -> None:
    text = (
        '#SBATCH --nodes=2\n#SBATCH --ntasks-per-node=1\nEXTRA=""\n'
        "srun $EXTRA torchrun --nnodes 2 --nproc_per_node 8 --rdzv_backend c10d "
        "--rdzv_endpoint n1:29400 train.py\n"
    )
    assert _script(tmp_path, text, nodes=2).sections["launch"]["world_size"] == 16


def test_eval_runs_the_command_its_variable_holds(tmp_path: Path) -> None:
    text = 'cmd="torchrun --nproc_per_node 8 train.py"\neval $cmd\n'
    assert _script(tmp_path, text).sections["launch"]["world_size"] == 8


def test_a_gloo_job_keeps_no_cuda_context_on_gpu0(tmp_path: Path) -> None:
    program = TENSOR_ONLY.replace("'nccl'", "'gloo'")
    (tmp_path / "train.py").write_text(program)
    report = _check(tmp_path, ["torchrun", "--nproc-per-node", "4", "train.py"])
    assert not [f for f in report.findings if f.code == "RM330"]


# review 39: more of what bash runs (shapes written here)
@pytest.mark.parametrize(
    ("text", "world"),
    [
        ('[ -f train.py ] || {\n  echo missing\n  exit 1\n}\ntorchrun --nproc_per_node 8 train.py\n', 8),
        ("command -v torchrun >/dev/null ||\n  exit 1\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ("(\n  cd /tmp\n  exit 0\n)\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ("{ torchrun --nproc_per_node 8 train.py; } 2>&1 | tee log.txt\n", 8),
        ("( torchrun --nproc_per_node 8 train.py )\n", 8),
        ("(cd /tmp && torchrun --nproc_per_node 8 train.py)\n", 8),
        ("if ! torchrun --nproc_per_node 8 train.py; then echo failed; exit 1; fi\n", 8),
        ('go() {\n  [ -z "$1" ] && return 1\n  torchrun --nproc_per_node "$1" train.py\n}\ngo 4\n', 4),
        ("cat <<\\EOF\nUsage: don't run this\nEOF\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ("cat > hosts <<END-OF-HOSTS\nnode1 slots=8\nEND-OF-HOSTS\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ("(( mask = 1 << 3 ))\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ("echo $'don\\'t panic'\ntorchrun --nproc_per_node 8 train.py\n", 8),
        ("for i in {1..5000}; do nc -z localhost 6379 && break; done\n"
         "torchrun --nproc_per_node 8 train.py\n", 8),
        ("if [ -n \"$I\" ]; then\n  select m in a b; do break; done\n  exit 0\nfi\n"
         "torchrun --nproc_per_node 8 train.py\n", 8),
    ],
)  # fmt: skip
def test_the_shell_reader_keeps_what_bash_launches(tmp_path: Path, text: str, world: int) -> None:
    report = _script(tmp_path, text)
    assert report.sections["launch"]["world_size"] == world
    assert _errors(report) == []


def test_a_sweep_over_an_unquoted_variable_splits_into_its_words(tmp_path: Path) -> None:
    text = (
        'GPUS="0 1 2 3"\nfor g in $GPUS; do\n  CUDA_VISIBLE_DEVICES=$g python train.py &\n'
        "done\nwait\n"
    )
    assert _script(tmp_path, text).sections["launch"]["worlds"] == 4


def test_an_arithmetic_command_makes_its_variable_unknown(tmp_path: Path) -> None:
    text = "N=4\n(( N = N * 2 ))\ntorchrun --nproc_per_node $N train.py\n"
    report = _script(tmp_path, text)
    assert [f.code for f in report.findings if f.code == "RM032"] == ["RM032"]


def test_declare_x_and_set_ae_export(tmp_path: Path) -> None:
    for head in ("declare -x CUDA_VISIBLE_DEVICES=0,1\n", "set -ae\nCUDA_VISIBLE_DEVICES=0,1\n"):
        report = _script(tmp_path, head + "torchrun --nproc_per_node 8 train.py\n")
        assert "RM201" in _errors(report), head


def test_helper_calls_are_counted_against_the_budget(tmp_path: Path) -> None:
    from rankmap.errors import InputError

    lines = ["f6() { :; :; :; :; :; :; :; :; :; :; }"]
    lines += [f"f{i}() {{ {'; '.join([f'f{i + 1}'] * 10)}; }}" for i in range(5, -1, -1)]
    text = "\n".join(lines) + "\nf0\ntorchrun --nproc_per_node 8 train.py\n"
    with pytest.raises(InputError, match="too much to simulate"):
        _script(tmp_path, text)


def test_a_c_style_loop_bound_held_in_a_variable(tmp_path: Path) -> None:
    body = " do\n  CUDA_VISIBLE_DEVICES=$i python train.py &\ndone\nwait\n"
    known = _script(tmp_path, "NGPU=4\nfor ((i=0; i<NGPU; i++));" + body)
    assert known.sections["launch"]["worlds"] == 4
    unknown = _script(tmp_path, "for ((i=0; i<$N; i++));" + body)
    assert _errors(unknown) == []


def test_a_wrapper_function_passes_its_arguments_on_after_shift(tmp_path: Path) -> None:
    text = (
        'run() {\n  local name=$1\n  shift\n  torchrun "$@" train.py\n}\n'
        "run exp1 --nproc_per_node 4\n"
    )
    assert _script(tmp_path, text).sections["launch"]["world_size"] == 4
