"""check's RM906 (a script's own MASTER_ADDR/MASTER_PORT before an env:// init) against a real
torchrun on CPU: the job fails exactly where check predicts it (shapes: tests/check/
test_rendezvous_rules.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from probe_helpers import base_env, free_port, run_group

from rankmap.adapters.files import LocalFiles
from rankmap.adapters.local import check_launch
from rankmap.inventory import load_machine

SCRIPT = (
    "import datetime\nimport os\nimport torch.distributed as dist\n\n"
    "os.environ['MASTER_ADDR'] = 'localhost'\n"
    "os.environ['MASTER_PORT'] = '{port}'\n"
    "dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=3))\n"
    "print('joined', dist.get_rank(), flush=True)\n"
)


@pytest.mark.usefixtures("need_torch")
@pytest.mark.parametrize("served", [False, True])
def test_prediction_agrees_with_a_real_torchrun(tmp_path: Path, served: bool) -> None:
    port = free_port()
    written = port if served else free_port()
    (tmp_path / "train.py").write_text(SCRIPT.format(port=written))
    launch = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    launch += ["--master-addr", "127.0.0.1", "--master-port", str(port)]
    report = check_launch(
        [*launch, "train.py"],
        machines=load_machine("dgx-h100"),
        env={},
        cwd=tmp_path,
        files=LocalFiles(),
    )
    predicted = [f for f in report.findings if f.code == "RM906"]
    run = run_group([*launch, "train.py"], base_env(), timeout=120, cwd=tmp_path)
    joined = run.stdout.count("joined")
    if served:
        assert predicted == [] and run.status == 0 and joined == 2, run.stderr[-2000:]
    else:
        assert len(predicted) == 1 and run.status != 0 and joined == 0
        assert f"while trying to connect to (localhost, {written})" in run.stderr
