"""main(argv, ctx): exit statuses and one-line errors, in-process."""

from __future__ import annotations

import json
import subprocess
import sys

from rankmap import __version__


def test_version_and_help_return_a_status_with_the_text_in_ctx_stdout(run_cli, capsys) -> None:  # type: ignore[no-untyped-def]
    # main() never raises: argparse's --version/--help write into ctx.stdout and return 0
    result = run_cli(["--version"])
    assert result.status == 0 and result.stdout == f"rankmap {__version__}\n"
    for argv in (["--help"], ["-h"], ["check", "--help"], ["explain", "-h"], ["probe", "--help"]):
        result = run_cli(argv)
        assert result.status == 0, argv
        assert result.stdout.startswith("usage: rankmap"), argv
    assert capsys.readouterr().out == ""  # nothing reached the real stdout


def test_no_command_prints_help_and_exits_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli([])
    assert result.status == 2
    assert "usage: rankmap" in result.stdout


def test_unknown_command_is_one_line(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["frobnicate"])
    assert result.status == 2
    lines = result.stderr.strip().splitlines()
    assert lines[0].startswith("rankmap: error: ")
    assert "frobnicate" in lines[0]
    assert "Traceback" not in result.stderr


def test_unknown_flag(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["machines", "--no-such-flag"])
    assert result.status == 2
    assert "--no-such-flag" in result.stderr


def test_machines_json_lists_builtin_profiles(run_cli) -> None:  # type: ignore[no-untyped-def]
    result = run_cli(["machines", "--json"])
    assert result.status == 0
    doc = json.loads(result.stdout)
    assert doc["schema"] == "rankmap/1"
    names = {m["name"]: m["gpus"] for m in doc["machines"]}
    assert names["dgx-h100"] == 8
    assert names["a100-mig"] == 1
    assert {"dgx-a100", "workstation-4gpu", "cloud-vm-1gpu"} <= set(names)


def test_python_dash_m_works_without_torch_import() -> None:
    code = (
        "import sys, runpy; sys.argv=['rankmap','machines','--json'];"
        "import rankmap.cli as c; rc=c.main();"
        "assert 'torch' not in sys.modules, 'torch imported'; sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["command"] == "machines"


def test_traceback_is_rankmaps_own_option_wherever_it_stands(run_cli) -> None:  # type: ignore[no-untyped-def]
    # review 22: the hint "re-run with --traceback" led to `rankmap explain --traceback`, a
    # usage error
    result = run_cli(["explain", "--traceback", "--help"])
    assert result.status == 0 and result.stdout.startswith("usage: rankmap explain")
