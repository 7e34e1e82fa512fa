"""Session 12: a fixed command is the user's command (review 19), written here."""

from __future__ import annotations

import json
from pathlib import Path

from rankmap.adapters.files import LocalFiles
from rankmap.check.engine import check_launch
from rankmap.cli import main
from rankmap.inventory import load_machine

DDP = (
    "import os, torch, torch.distributed as dist\n"
    "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "dist.init_process_group('nccl')\n"
)


def _fix(tmp_path: Path, argv: list[str]) -> str:
    (tmp_path / "train.py").write_text(DDP)
    report = check_launch(
        argv, machines=load_machine("workstation-4gpu"), env={}, cwd=tmp_path, files=LocalFiles()
    )
    return report.ordered_findings()[0].fix


def test_the_fix_keeps_the_environment_words_before_the_launcher(tmp_path: Path) -> None:
    fix = _fix(tmp_path, ["env", "FOO=1", "torchrun", "--nproc-per-node", "8", "train.py"])
    assert fix.startswith("env FOO=1 torchrun --nproc-per-node 4 train.py")
    fix = _fix(
        tmp_path, ["CUDA_VISIBLE_DEVICES=0,1", "torchrun", "--nproc-per-node", "4", "train.py"]
    )
    assert fix.startswith("CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc-per-node 2 train.py")
    # a wrapper before the launcher is not an environment word: the launcher's command alone
    fix = _fix(tmp_path, ["uv", "run", "torchrun", "--nproc-per-node", "8", "train.py"])
    assert fix.startswith("torchrun --nproc-per-node 4 train.py")


def test_a_secret_in_the_typed_environment_stays_out_of_the_fix(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "train.py").write_text(DDP)
    secret = "hf_Zq8XfL2mN4pR7tV9wY1bC3dE5gH6jK0"
    argv = ["--machine", "workstation-4gpu", "--json", "--", "env", f"HF_TOKEN={secret}"]
    argv += ["torchrun", "--nproc-per-node", "8", str(tmp_path / "train.py")]
    assert main(["check", *argv]) == 1
    out = capsys.readouterr().out
    assert secret not in out
    assert "HF_TOKEN=" in json.loads(out)["findings"][0]["fix"]


def _check_script(tmp_path: Path, script: str, nproc: int) -> tuple[list[str], list[int | None]]:
    (tmp_path / "train.py").write_text(script)
    report = check_launch(
        ["torchrun", "--nproc-per-node", str(nproc), "train.py"],
        machines=load_machine("workstation-4gpu"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    errors = [f.code for f in report.ordered_findings() if f.severity.value == "error"]
    return errors, [p.cuda_index for p in report.placements]


def test_a_literal_modulus_on_the_local_rank_is_computed(tmp_path: Path) -> None:
    # review 20: `local_rank % 2` was read as `% torch.cuda.device_count()`
    script = (
        "import os, torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "torch.cuda.set_device(local_rank % 2)\n"
    )
    errors, cuda = _check_script(tmp_path, script, 4)
    assert cuda == [0, 1, 0, 1] and errors == ["RM101"]
    assert _check_script(tmp_path, script, 2) == ([], [0, 1])
    # modulo the device count stays the wrap it was
    wrap = script.replace("local_rank % 2", "local_rank % torch.cuda.device_count()")
    assert _check_script(tmp_path, wrap, 4) == ([], [0, 1, 2, 3])


def _python(tmp_path: Path, script: str, argv: list[str] | None = None) -> list[str]:
    (tmp_path / "train.py").write_text(script)
    report = check_launch(
        argv or ["python", "train.py"],
        machines=load_machine("workstation-4gpu"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    return [f.code for f in report.ordered_findings() if f.severity.value == "error"]


# review 24: scripts that run on one GPU under `python` and DDP under torchrun
OPTIONAL_DDP = {
    "membership": (
        "import os, torch\nif 'LOCAL_RANK' in os.environ:\n"
        "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "model = torch.nn.Linear(4, 4).cuda()\n"
    ),
    "sentinel": (
        "import os, torch\nlocal_rank = int(os.environ.get('LOCAL_RANK', -1))\n"
        "if local_rank != -1:\n    torch.cuda.set_device(local_rank)\n"
    ),
    "flag": (
        "import os, torch\nddp = int(os.environ.get('RANK', -1)) != -1\nif ddp:\n"
        "    local = int(os.environ['LOCAL_RANK'])\n    torch.cuda.set_device(f'cuda:{local}')\n"
        "else:\n    device = 'cuda'\n"
    ),
}


def test_a_set_device_under_an_environment_test_does_not_run_under_plain_python(
    tmp_path: Path,
) -> None:
    for name, script in OPTIONAL_DDP.items():
        assert _python(tmp_path, script) == [], name
        torchrun = ["torchrun", "--nproc-per-node", "8", "train.py"]
        assert _python(tmp_path, script, torchrun) == ["RM102"], name  # still too many


def test_a_guarded_read_of_the_global_rank_still_fails_on_two_nodes(tmp_path: Path) -> None:
    script = (
        "import os, torch\nif 'LOCAL_RANK' in os.environ:\n"
        "    torch.cuda.set_device(int(os.environ['RANK']))\n"
    )
    (tmp_path / "train.py").write_text(script)
    report = check_launch(
        ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", "train.py"],
        machines=load_machine("dgx-a100") * 2,
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    assert "RM401" in [f.code for f in report.ordered_findings() if f.severity.value == "error"]


def test_a_constant_branch_never_stands_for_a_value_not_followed(tmp_path: Path) -> None:
    # review 24: `default if value is None else int(value)` with the key a parameter was the
    # constant 0 for every rank (RM302)
    script = (
        "import os, torch\ndef env_int(name, default=0):\n    value = os.environ.get(name)\n"
        "    return default if value is None else int(value)\n"
        "torch.cuda.set_device(env_int('LOCAL_RANK'))\n"
    )
    assert _python(tmp_path, script, ["torchrun", "--nproc-per-node", "4", "train.py"]) == []
    # a constant on every path is still the constant
    fixed = (
        "import torch, torch.distributed as dist\ndef dev(x=None):\n    return 0 if x is None else 0\n"
        "dist.init_process_group('nccl')\ntorch.cuda.set_device(dev())\n"
    )
    assert _python(tmp_path, fixed, ["torchrun", "--nproc-per-node", "4", "train.py"]) == ["RM302"]


def _shell(tmp_path: Path, text: str) -> tuple[list[str], list[str]]:
    (tmp_path / "train.py").write_text(DDP)
    (tmp_path / "sweep.sh").write_text(text)
    report = check_launch(
        ["bash", "sweep.sh"],
        machines=load_machine("dgx-a100"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    found = report.ordered_findings()
    return [f.code for f in found if f.severity.value == "error"], [f.title for f in found]


def test_variables_set_in_a_loop_body_are_computed_per_iteration(tmp_path: Path) -> None:
    # review 24: `port=$((29500 + i))` in the body stayed "$port" for every run (RM906)
    sweep = (
        "i=0\nfor lr in 1e-4 3e-4 1e-3 3e-3; do\n    g0=$((i * 2)); g1=$((i * 2 + 1))\n"
        "    port=$((29500 + i))\n"
        "    CUDA_VISIBLE_DEVICES=$g0,$g1 torchrun --nproc_per_node 2 --master_port $port "
        "train.py --lr $lr &\n    i=$((i + 1))\ndone\nwait\n"
    )
    assert _shell(tmp_path, sweep)[0] == []
    # the same sweep without its own GPUs per run shares GPUs 0 and 1: separate jobs, so a
    # warning (session 13, review 34), not a predicted failure
    shared = sweep.replace("CUDA_VISIBLE_DEVICES=$g0,$g1 ", "")
    errors, titles = _shell(tmp_path, shared)
    assert errors == []
    assert any("independent launches all use GPU 0" in t for t in titles), titles


def test_a_visible_list_the_script_computes_where_rankmap_cannot_is_not_simulated(
    tmp_path: Path,
) -> None:
    sweep = (
        "for i in 0 1; do\n    if [ $i -eq 0 ]; then gpus=0,1,2,3; else gpus=4,5,6,7; fi\n"
        "    CUDA_VISIBLE_DEVICES=$gpus torchrun --nproc_per_node 4 --master_port $((29500 + i)) "
        "train.py &\ndone\nwait\n"
    )
    errors, titles = _shell(tmp_path, sweep)
    assert errors == []
    assert any("CUDA_VISIBLE_DEVICES=$gpus is computed by the launch script" in t for t in titles)
    assert not any("RM202" in t or "neither an index" in t for t in titles)


def test_an_unexported_variable_does_not_reach_the_launch(tmp_path: Path) -> None:
    # review 20: `CUDA_VISIBLE_DEVICES=0` alone on its line (no export) is the shell's own
    text = "CUDA_VISIBLE_DEVICES=0\ntorchrun --nproc_per_node 8 train.py\n"
    assert _shell(tmp_path, text)[0] == []
    assert _shell(tmp_path, "export " + text)[0] != []


def test_export_without_a_value_and_set_a_export_the_variable(tmp_path: Path) -> None:
    # review 25: after "a variable set without export stays the shell's", these were missed
    body = "torchrun --nproc_per_node 8 train.py\n"
    assert _shell(tmp_path, "CUDA_VISIBLE_DEVICES=0\nexport CUDA_VISIBLE_DEVICES\n" + body)[0] != []
    assert _shell(tmp_path, "set -a\nCUDA_VISIBLE_DEVICES=0\n" + body)[0] != []


def test_a_module_level_read_before_an_undecided_if_still_raises(tmp_path: Path) -> None:
    # review 25: the if around set_device made the read above it conditional
    script = (
        "import os, torch\nlocal_rank = int(os.environ['LOCAL_RANK'])\n"
        "if torch.cuda.is_available():\n    torch.cuda.set_device(local_rank)\n"
    )
    (tmp_path / "train.py").write_text(script)
    report = check_launch(
        ["srun", "--ntasks", "4", "python", "train.py"],
        machines=load_machine("dgx-a100"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    assert "RM903" in [f.code for f in report.ordered_findings() if f.severity.value == "error"]


def test_the_global_rank_modulo_the_node_s_gpus_is_no_global_rank_error(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    script = (
        "import os, torch, torch.distributed as dist\ndist.init_process_group('nccl')\n"
        "torch.cuda.set_device(int(os.environ['RANK']) % 8)\n"
    )
    (tmp_path / "train.py").write_text(script)
    argv = ["check", "-m", "dgx-a100", "-m", "dgx-a100", "--json", "--"]
    argv += ["torchrun", "--nnodes", "2", "--nproc-per-node", "8", str(tmp_path / "train.py")]
    assert main(argv) == 0
    assert "RM401" not in capsys.readouterr().out


def test_positional_and_backtick_parameters_in_a_visible_list_are_not_simulated(
    tmp_path: Path,
) -> None:
    for value in ("$1", "`cat gpus.txt`", "$(cat gpus.txt)", "$@"):
        text = f"CUDA_VISIBLE_DEVICES={value} torchrun --nproc_per_node 4 train.py\n"
        assert _shell(tmp_path, text)[0] == [], value


def test_elastic_launch_from_the_script_starts_workers_with_local_rank(tmp_path: Path) -> None:
    # review 28: the script was one plain python process and RM903 KeyError
    script = (
        "import os, torch, torch.distributed as dist\n"
        "from torch.distributed.launcher.api import LaunchConfig, elastic_launch\n"
        "def trainer():\n    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "    dist.init_process_group('nccl')\n"
        "if __name__ == '__main__':\n"
        "    cfg = LaunchConfig(min_nodes=1, max_nodes=1, nproc_per_node={n})\n"
        "    elastic_launch(cfg, trainer)()\n"
    )
    for n, errors in ((4, []), (8, ["RM102"])):
        (tmp_path / "train.py").write_text(script.format(n=n))
        report = check_launch(
            ["python", "train.py"],
            machines=load_machine("workstation-4gpu"),
            env={},
            cwd=tmp_path,
            files=LocalFiles(),
        )
        assert len(report.placements) == n
        assert [f.code for f in report.ordered_findings() if f.severity.value == "error"] == errors


def test_apptainer_singularity_and_enroot_run_the_launcher_after_the_image(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(DDP)
    launch = ["torchrun", "--nproc-per-node", "8", "train.py"]
    for wrapper in (
        ["apptainer", "exec", "--nv", "--bind", "/scratch", "img.sif"],
        ["singularity", "run", "--nv", "img.sif"],
        ["enroot", "start", "--rw", "--mount", "/data:/data", "pytorch"],
    ):
        report = check_launch(
            [*wrapper, *launch],
            machines=load_machine("workstation-4gpu"),
            env={},
            cwd=tmp_path,
            files=LocalFiles(),
        )
        errors = [f.code for f in report.ordered_findings() if f.severity.value == "error"]
        assert errors == ["RM102"], wrapper  # 8 processes, 4 GPUs: read through the wrapper


def test_rm030_quotes_what_it_could_not_follow_once(tmp_path: Path) -> None:
    script = "import torch\nfrom mylab import pick\ntorch.cuda.set_device(pick())\n"
    (tmp_path / "train.py").write_text(script)
    report = check_launch(
        ["torchrun", "--nproc-per-node", "2", "train.py"],
        machines=load_machine("workstation-4gpu"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    rm030 = next(f for f in report.ordered_findings() if f.code == "RM030")
    assert rm030.evidence and not any(e in rm030.detail for e in rm030.evidence)
