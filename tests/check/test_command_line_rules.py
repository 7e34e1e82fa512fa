"""RM901: the launcher appends ``--local-rank=N``/``--local_rank=N`` to a command line that
cannot take it (scripts written here). Besides argparse without the option: an ``@hydra.main``
entry (Hydra parses sys.argv with argparse and declares no local rank), and a strict
``parse_args()`` beside a ``parse_known_args`` pre-parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import check_launch
from rankmap.findings import Finding, Report
from rankmap.inventory import load_machine

HYDRA = (
    "import os\nimport hydra\nimport torch\nimport torch.distributed as dist\n{imports}\n"
    "@{decorator}(config_path='conf', config_name='train', version_base=None)\n"
    "def main(cfg):\n    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
    "    dist.init_process_group('nccl')\n\n"
    "if __name__ == '__main__':\n{before}    main()\n"
)
LAUNCH = ("python", "-m", "torch.distributed.launch", "--nproc_per_node", "8")
DEEPSPEED = ("deepspeed", "--num_gpus", "8")


def _check(tmp_path: Path, text: str, launch: tuple[str, ...], *args: str) -> Report:
    script = tmp_path / "train.py"
    script.write_text(text)
    return check_launch(
        [*launch, str(script), *args],
        machines=load_machine("dgx-h100"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )


def _errors(report: Report) -> list[Finding]:
    return [f for f in report.findings if f.severity.value == "error"]


@pytest.mark.parametrize(
    ("decorator", "imports"),
    [("hydra.main", ""), ("main_entry", "from hydra import main as main_entry")],
)
@pytest.mark.parametrize(
    ("launch", "arg", "fix"),
    [
        (LAUNCH, "--local-rank", "torchrun --nproc_per_node 8 "),
        (DEEPSPEED, "--local_rank", "deepspeed --no_local_rank --num_gpus 8 "),
    ],
)
def test_hydra_entry_rejects_the_appended_local_rank(
    tmp_path: Path, decorator: str, imports: str, launch: tuple[str, ...], arg: str, fix: str
) -> None:
    text = HYDRA.format(decorator=decorator, imports=imports, before="")
    report = _check(tmp_path, text, launch, "trainer.lr=0.1")
    errors = _errors(report)
    assert [f.code for f in errors] == ["RM901"]
    f = errors[0]
    assert "Hydra" in f.title and "train.py:6" in f.title and "Hydra 1.x assumed" in f.title
    assert f"error: unrecognized arguments: {arg}=0" in f.evidence
    assert f.fix == fix + str(tmp_path / "train.py") + " trainer.lr=0.1"
    assert report.sections["predicted_errors"] == [f"error: unrecognized arguments: {arg}=0"]


def test_hydra_under_torchrun_is_right(tmp_path: Path) -> None:
    text = HYDRA.format(decorator="hydra.main", imports="", before="")
    report = _check(tmp_path, text, ("torchrun", "--nproc-per-node", "8"))
    assert _errors(report) == []


def test_hydra_after_rewriting_sys_argv_is_no_error(tmp_path: Path) -> None:
    """Scripts that turn ``--local_rank=0`` into a Hydra override before ``main()`` runs."""
    before = "    import sys\n    sys.argv = [a.lstrip('-') for a in sys.argv]\n"
    text = HYDRA.format(decorator="hydra.main", imports="", before=before)
    assert _errors(_check(tmp_path, text, LAUNCH)) == []


def test_strict_parser_beside_a_known_args_pre_parser_rejects_the_spelling(
    tmp_path: Path,
) -> None:
    text = (
        "import argparse, os\nimport torch\nimport torch.distributed as dist\n\n"
        "pre = argparse.ArgumentParser(add_help=False)\npre.add_argument('--config')\n"
        "config = pre.parse_known_args()[0].config\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int)\n"
        "args = parser.parse_args()\ntorch.cuda.set_device(args.local_rank)\n"
        "dist.init_process_group('nccl')\n"
    )
    errors = _errors(_check(tmp_path, text, LAUNCH))
    assert [f.code for f in errors] == ["RM901"]
    assert "only --local_rank" in errors[0].title


def test_only_known_args_tolerates_the_spelling(tmp_path: Path) -> None:
    text = (
        "import argparse, os\nimport torch\nimport torch.distributed as dist\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('--local_rank', type=int)\n"
        "args, _ = parser.parse_known_args()\n"
        "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n"
        "dist.init_process_group('nccl')\n"
    )
    assert _errors(_check(tmp_path, text, LAUNCH)) == []
