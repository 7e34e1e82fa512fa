"""RM906 from a script that writes MASTER_ADDR/MASTER_PORT itself before an env:// init.

Under torchrun every worker is a client of the store torchrun's agent serves (torch 2.13: a free
port for --standalone, c10d and a single-node launch without --master-port; --master-port for
static rendezvous). tests/probe/test_rendezvous_agreement.py runs the shape under a real
torchrun on CPU and checks that the prediction and the job agree.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from script_checks import check_script

from rankmap.findings import Finding

HEAD = "import datetime\nimport os\nimport torch.distributed as dist\n\n"
WRITES = (
    "def main():\n"
    "    os.environ['MASTER_ADDR'] = 'localhost'\n"
    "    os.environ['MASTER_PORT'] = '{port}'\n"
    "    dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=3))\n"
    "    print('joined', dist.get_rank(), flush=True)\n\n"
    "main()\n"
)


def _rm906(
    tmp_path: Path, body: str, launch: list[str], nodes: int = 1, env: dict[str, str] | None = None
) -> list[Finding]:
    report = check_script(tmp_path, HEAD + body, launch, nodes=nodes, env=env)
    return [f for f in report.findings if f.code == "RM906"]


@pytest.mark.parametrize(
    "launch",
    [
        ["torchrun", "--standalone", "--nproc-per-node", "4"],
        ["torchrun", "--nproc-per-node", "4"],  # one node, no port: c10d on a free port
        ["torchrun", "--nproc-per-node", "4", "--master-port", "29500"],
        ["python", "-m", "torch.distributed.run", "--rdzv-backend", "c10d", "--nproc-per-node=4"],
    ],
)
def test_a_port_torchrun_does_not_serve_is_an_error(tmp_path: Path, launch: list[str]) -> None:
    found = _rm906(tmp_path, WRITES.format(port=12345), launch)
    assert [f.severity.value for f in found] == ["error"]
    assert "MASTER_PORT=12345" in found[0].title and "train.py:7" in found[0].title
    assert sorted(found[0].ranks) == [0, 1, 2, 3]
    assert found[0].fix.startswith('os.environ.setdefault("MASTER_PORT", "12345")')


@pytest.mark.parametrize(
    "body",
    [
        WRITES.format(port=12345).replace(
            "os.environ['MASTER_PORT'] = '12345'", "os.environ.setdefault('MASTER_PORT', '12345')"
        ),
        WRITES.format(port=12345).replace(
            "    os.environ['MASTER_PORT']",
            "    if 'RANK' not in os.environ:\n        os.environ['MASTER_PORT']",
        ),
        # the whole set-up only where no launcher set RANK (at the call, or around the block)
        WRITES.format(port=12345).replace("main()\n", "if 'RANK' not in os.environ:\n    main()\n"),
        WRITES.format(port=12345)
        .replace("\n    ", "\n        ")
        .replace("def main():\n", "def main():\n    if 'RANK' not in os.environ:\n"),
        # a set-up function nobody calls or hands on
        WRITES.format(port=12345).replace("main()\n", "pass\n"),
        # handed to mp.spawn only on a branch the analysis cannot decide
        WRITES.format(port=12345).replace(
            "main()\n",
            "import sys\nimport torch.multiprocessing as mp\n"
            "if sys.argv[-1] == 'spawn':\n    mp.spawn(main, nprocs=2)\n",
        ),
        # named in a table only; the call that runs it waits on an undecided branch
        WRITES.format(port=12345).replace(
            "main()\n",
            "RUNNERS = {'spawn': main}\nimport sys\n"
            "if sys.argv[-1] == 'spawn':\n    RUNNERS['spawn']()\n",
        ),
        # torchrun's path returns first; the fallback set-up is for a plain `python train.py`
        "def main():\n    if 'LOCAL_RANK' in os.environ:\n        dist.init_process_group('gloo')\n"
        "        return\n    os.environ['MASTER_PORT'] = '12345'\n"
        "    dist.init_process_group('gloo', rank=0, world_size=1)\n\nmain()\n",
        # only where the first init failed
        "try:\n    dist.init_process_group('gloo')\nexcept ValueError:\n"
        "    os.environ['MASTER_PORT'] = '12345'\n"
        "    dist.init_process_group('gloo', rank=0, world_size=1)\n",
        # written after the init: the rendezvous has happened
        "def main():\n    dist.init_process_group('gloo')\n    os.environ['MASTER_PORT'] = '12345'\n\nmain()\n",
    ],
)
def test_writes_that_do_not_decide_the_rendezvous_are_no_finding(tmp_path: Path, body: str) -> None:
    assert _rm906(tmp_path, body, ["torchrun", "--standalone", "--nproc-per-node", "4"]) == []


def test_the_port_torchrun_serves_or_a_launcher_without_agent_store_is_no_finding(
    tmp_path: Path,
) -> None:
    body = WRITES.format(port=12345)
    assert (
        _rm906(tmp_path, body, ["torchrun", "--nproc-per-node", "4", "--master-port", "12345"])
        == []
    )
    assert _rm906(tmp_path, body, ["mpirun", "-np", "4", "python"]) == []


def test_a_loopback_address_on_two_nodes_strands_the_other_nodes(tmp_path: Path) -> None:
    launch = ["torchrun", "--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "node0"]
    found = _rm906(tmp_path, WRITES.format(port=29500), launch, nodes=2)
    assert len(found) == 1 and "MASTER_ADDR=localhost" in found[0].title
    assert sorted(found[0].ranks) == [2, 3]  # the ranks of the second node
    one_node = ["torchrun", "--nproc-per-node", "2", "--master-port", "29500"]
    assert _rm906(tmp_path, WRITES.format(port=29500), one_node) == []  # loopback is this host


def test_a_function_handed_to_mp_spawn_unconditionally_is_reached(tmp_path: Path) -> None:
    """torchrun's workers' children inherit TORCHELASTIC_USE_AGENT_STORE: still clients."""
    body = (
        WRITES.format(port=12345)
        .replace("def main():\n", "def main(index):\n")
        .replace("main()\n", "import torch.multiprocessing as mp\nmp.spawn(main, nprocs=2)\n")
    )
    found = _rm906(tmp_path, body, ["torchrun", "--standalone", "--nproc-per-node", "1"])
    assert [f.severity.value for f in found] == ["error"]


@pytest.mark.parametrize(
    ("launch", "env", "code"),
    [
        # static rendezvous serves the --rdzv-endpoint's port (launcher/api.py)
        (["torchrun", "--nproc-per-node", "2", "--rdzv-backend", "static",
          "--rdzv-endpoint", "127.0.0.1:12345"], {}, None),
        # sharing turned off: rank 0 serves MASTER_PORT itself
        (["torchrun", "--standalone", "--nproc-per-node", "2"],
         {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}, None),
        (["torchrun", "--standalone", "--nproc-per-node", "2"], {}, "error"),
    ],
)  # fmt: skip
def test_what_torchrun_serves_decides(
    tmp_path: Path, launch: list[str], env: dict[str, str], code: str | None
) -> None:
    found = [f.severity.value for f in _rm906(tmp_path, WRITES.format(port=12345), launch, env=env)]
    assert found == ([code] if code else [])


def test_29500_on_one_node_without_a_port_is_a_warning_naming_the_version(tmp_path: Path) -> None:
    """torch before PR #175699 served 29500 there; torch 2.13 a free port."""
    found = _rm906(tmp_path, WRITES.format(port=29500), ["torchrun", "--nproc-per-node", "4"])
    assert [f.severity.value for f in found] == ["warning"]
    assert "torch 2.13" in found[0].title and "#175699" in found[0].detail


def test_the_fix_as_written_ends_the_finding(tmp_path: Path) -> None:
    launch = ["torchrun", "--nnodes", "2", "--nproc-per-node", "2", "--master-addr", "node0"]
    body = WRITES.format(port=12345)
    fix = _rm906(tmp_path, body, launch, nodes=2)[0].fix
    fixed = body.replace("    os.environ['MASTER_ADDR'] = 'localhost'\n", "").replace(
        "os.environ['MASTER_PORT'] = '12345'", fix
    )
    compile(fixed, "train.py", "exec")  # code, not prose
    assert _rm906(tmp_path, fixed, launch, nodes=2) == []


def test_a_tcp_init_method_is_the_same_address(tmp_path: Path) -> None:
    """init_method="tcp://H:P" goes through the same store creation as env:// (client only
    under torchrun): the port torchrun serves decides, and env:// is the fix."""
    body = (
        "def main():\n    dist.init_process_group('gloo', init_method='tcp://127.0.0.1:23456', "
        "rank=int(os.environ['RANK']), world_size=int(os.environ['WORLD_SIZE']))\n\nmain()\n"
    )
    standalone = ["torchrun", "--standalone", "--nproc-per-node", "2"]
    found = _rm906(tmp_path, body, standalone)
    assert [f.severity.value for f in found] == ["error"]
    assert "tcp://127.0.0.1:23456" in found[0].title and found[0].fix == 'init_method="env://"'
    fixed = body.replace("init_method='tcp://127.0.0.1:23456'", found[0].fix)
    assert _rm906(tmp_path, fixed, standalone) == []
    served = ["torchrun", "--nproc-per-node", "2", "--master-port", "23456"]
    assert _rm906(tmp_path, body, served) == []
    # without a rank, tcp:// stops with "rank parameter missing" before any connection
    unranked = body.replace(", rank=int(os.environ['RANK'])", "")
    assert _rm906(tmp_path, unranked, standalone) == []
    # a URL built at run time is not followed
    built = body.replace("'tcp://127.0.0.1:23456'", "f'tcp://{os.environ[\"HOST\"]}:23456'")
    assert _rm906(tmp_path, built, standalone) == []
