"""Open world for "no device selected" (RM301) and where local imports are found.

RM301 is an error only when the whole path from the script's start to its first CUDA use was
read: a call into code the analysis did not read (a package not found, a module it does not
model) may select the device, so the selection is unknown (RM030 info naming the call).
Scripts written here, in the shapes real repositories take.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import check_launch
from rankmap.check.script_scan import scan_path
from rankmap.findings import Report
from rankmap.inventory import load_machine

NCCL_CUDA = "    dist.init_process_group('nccl')\n    model = torch.nn.Linear(2, 2).cuda()\n"


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _check(script: Path, nodes: int = 1) -> Report:
    return check_launch(
        ["torchrun", "--nnodes", str(nodes), "--nproc-per-node", "8", str(script)],
        machines=load_machine("dgx-h100"),
        env={},
        nodes=nodes,
        cwd=script.parent,
        files=LocalFiles(),
    )


def _codes(report: Report) -> list[tuple[str, str]]:
    return [(f.code, f.severity.value) for f in report.findings]


def test_unread_helper_before_cuda_is_unknown_not_rm301(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "train.py": "import torch\nimport torch.distributed as dist\n"
            "from mylab.dist import init_distributed_mode\n\n"
            "def main():\n    init_distributed_mode()\n" + NCCL_CUDA + "\nmain()\n",
        },
    )
    report = _check(tmp_path / "train.py")
    assert report.sections["launch"]["device_selection"] == "unknown"
    assert _codes(report) == [("RM030", "info")]
    title = report.findings[0].title
    assert f"{tmp_path / 'train.py'}:6" in title and "init_distributed_mode()" in title
    assert "mylab.dist" in title


def test_unread_call_after_the_first_cuda_use_keeps_rm301(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "train.py": "import torch\nimport torch.distributed as dist\nimport numpy as np\n"
            "from mylab.log import report\n\n"
            "def main():\n    np.random.seed(0)\n" + NCCL_CUDA + "    report(model)\n\nmain()\n",
        },
    )
    report = _check(tmp_path / "train.py")
    assert report.sections["launch"]["device_selection"] == "none"
    assert ("RM301", "error") in _codes(report)


def test_unread_call_in_a_spawned_worker_is_unknown(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "train.py": "import torch\nimport torch.distributed as dist\n"
            "import torch.multiprocessing as mp\nimport cluster_utils\n\n"
            "def worker(i):\n    cluster_utils.setup(i)\n" + NCCL_CUDA + "\n"
            "if __name__ == '__main__':\n    mp.spawn(worker, nprocs=8)\n",
        },
    )
    sel = scan_path(tmp_path / "train.py", (tmp_path / "train.py").read_text(), None, LocalFiles())
    assert sel.kind == "unknown"
    assert sel.blocked_by is not None and "train.py:7" in sel.blocked_by


def test_local_class_init_is_followed_to_an_unread_call(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "trainer.py": "from .comm import setup\n\nclass Trainer:\n"
            "    def __init__(self):\n        setup()\n",
            "train.py": "import torch\nimport torch.distributed as dist\n"
            "from trainer import Trainer\n\ndef main():\n    t = Trainer()\n"
            + NCCL_CUDA
            + "\nmain()\n",
        },
    )
    sel = scan_path(tmp_path / "train.py", (tmp_path / "train.py").read_text(), None, LocalFiles())
    assert sel.kind == "unknown"
    assert sel.blocked_by is not None and "trainer.py:5" in sel.blocked_by
    assert "relative import not found" in sel.blocked_by


@pytest.mark.parametrize(
    ("script", "package"),
    [
        ("scripts/train.py", "src/mylab"),  # src layout: ../src/mylab
        ("tools/train.py", "mylab"),  # ../mylab
        ("projects/vision/tools/train.py", "mylab"),  # three levels up, at the repository root
        ("projects/vision/tools/train.py", "src/mylab"),
    ],
)
def test_local_package_is_found_from_the_repository_root(
    tmp_path: Path, script: str, package: str
) -> None:
    _write(
        tmp_path,
        {
            "pyproject.toml": "[project]\nname = 'mylab'\n",
            f"{package}/__init__.py": "",
            f"{package}/dist.py": "import os\nimport torch\n\ndef init_distributed_mode():\n"
            "    torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n",
            script: "import torch\nimport torch.distributed as dist\n"
            "from mylab.dist import init_distributed_mode\n\n"
            "def main():\n    init_distributed_mode()\n" + NCCL_CUDA + "\nmain()\n",
        },
    )
    for nodes in (1, 2):
        report = _check(tmp_path / script, nodes)
        assert report.sections["launch"]["device_selection"] == "local_rank"
        assert not [f for f in report.findings if f.severity.value == "error"], _codes(report)


def test_no_walk_above_the_repository_root(tmp_path: Path) -> None:
    """A package beside the repository (not in it) is not read: the call stays unknown."""
    _write(
        tmp_path,
        {
            "mylab/__init__.py": "",
            "mylab/dist.py": "import torch\n\ndef init_distributed_mode():\n"
            "    torch.cuda.set_device(0)\n",
            "repo/pyproject.toml": "",
            "repo/a/b/train.py": "import torch\nimport torch.distributed as dist\n"
            "from mylab.dist import init_distributed_mode\n\n"
            "def main():\n    init_distributed_mode()\n" + NCCL_CUDA + "\nmain()\n",
        },
    )
    script = tmp_path / "repo/a/b/train.py"
    sel = scan_path(script, script.read_text(), None, LocalFiles())
    assert sel.kind == "unknown"


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("import os\nimport torch\nprint 'start'\ntorch.cuda.set_device(0)\n", 3),
        ("import torch\ntry:\n    import apex\nexcept ImportError, e:\n    pass\n", 4),
        ("import torch\nx = 0755\n", 2),
    ],
)
def test_python2_script_is_an_info_that_says_so(tmp_path: Path, source: str, line: int) -> None:
    _write(tmp_path, {"train.py": source})
    report = _check(tmp_path / "train.py")
    assert _codes(report) == [("RM004", "info")]
    title = report.findings[0].title
    assert f"train.py:{line}:" in title and "Python 2 syntax" in title


def test_python3_syntax_error_is_an_info_without_the_python2_hint(tmp_path: Path) -> None:
    _write(tmp_path, {"train.py": "import torch\ndef main(:\n    pass\n"})
    report = _check(tmp_path / "train.py")
    assert _codes(report) == [("RM004", "info")]
    assert "train.py:2:" in report.findings[0].title
    assert "Python 2" not in report.findings[0].title


def test_hydra_instantiate_before_cuda_is_unknown(tmp_path: Path) -> None:
    """``instantiate(cfg.trainer)`` builds whatever the config names: it may select the device."""
    _write(
        tmp_path,
        {
            "train.py": "import torch\nimport torch.distributed as dist\n"
            "from hydra.utils import instantiate\n\n"
            "def main(cfg):\n    trainer = instantiate(cfg.trainer)\n" + NCCL_CUDA + "\n"
            "main(None)\n",
        },
    )
    sel = scan_path(tmp_path / "train.py", (tmp_path / "train.py").read_text(), None, LocalFiles())
    assert sel.kind == "unknown" and sel.blocked_by is not None
    assert "instantiate(cfg.trainer)" in sel.blocked_by
