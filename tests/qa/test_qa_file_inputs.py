"""Every file-taking option against hostile files: one line on stderr, exit 2, never a hang."""

from __future__ import annotations

from pathlib import Path

import pytest
from qa_helpers import assert_one_line_error

TORCHRUN = ["--", "torchrun", "--nproc-per-node", "2", "train.py"]


@pytest.mark.parametrize(
    "content",
    [
        "x" * 20_000_000,  # one 20 MB token: shlex is quadratic in token length
        'torchrun "' + "a b " * 500_000 + '"',  # one long quoted token
        "$((" * 400_000,  # unclosed arithmetic openers
        "#!/bin/bash\n" + "y" * 3_000_000 + "\ntorchrun --nproc-per-node 2 train.py\n",
        ("x" * 60_000 + "\n") * 60,  # many long lines
    ],
    ids=["token", "quoted", "arith", "data-line-then-launch", "many-lines"],
)
def test_shell_file_with_huge_lines_does_not_hang(run_proc, tmp_path: Path, content: str):
    (tmp_path / "job.sh").write_text(content)
    res = run_proc(["check", "--machine", "dgx-h100", "--shell", "job.sh"], timeout=60)
    if "torchrun --nproc-per-node 2" in content:
        assert res.returncode == 0, res.stderr  # the real launch line is still found
    else:
        assert_one_line_error(res.returncode, res.stderr)


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("deep.json", "[" * 100_000 + "]" * 100_000),
        ("deep-hosts.json", '{"hosts": ' + "[" * 100_000 + "]" * 100_000 + "}"),
        ("deep-obj.json", '{"hosts": [' + '{"a": ' * 100_000 + "1" + "}" * 100_000 + "]}"),
    ],
    ids=["list", "hosts", "object"],
)
def test_deeply_nested_machine_json(run_cli, tmp_path: Path, name: str, content: str):
    (tmp_path / name).write_text(content)
    res = run_cli(["doctor", "--machine", name])
    assert_one_line_error(res.status, res.stderr)


def test_deeply_nested_accelerate_yaml(run_cli, tmp_path: Path):
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    res = run_cli(
        ["check", "--machine", "dgx-h100", "--", "accelerate", "launch"]
        + ["--config_file", "deep.yaml", "train.py"]
    )
    assert_one_line_error(res.status, res.stderr)


def test_unreadable_log_is_a_one_line_error(run_cli):
    # /proc/self/mem opens but every read fails with EIO: an unreadable file for root too.
    res = run_cli(["explain", "/proc/self/mem"])
    assert_one_line_error(res.status, res.stderr)
    assert "Input/output error" in res.stderr


def _limit_memory() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


@pytest.mark.parametrize(
    "argv",
    [
        ["doctor", "--machine", "/dev/zero"],
        ["doctor", "--machine", "/dev/urandom"],
        ["topo", "--topo-file", "/dev/zero"],
        ["explain", "/dev/zero"],
    ],
    ids=lambda a: " ".join(a),
)
def test_endless_files_are_refused_without_reading_them_whole(run_proc, argv):
    res = run_proc(argv, timeout=60, preexec_fn=_limit_memory)
    assert_one_line_error(res.returncode, res.stderr)


def test_utf16_nvidia_smi_output_is_read(run_cli, tmp_path: Path):
    # `nvidia-smi > smi.txt` in Windows PowerShell writes UTF-16 with a BOM.
    table = (Path(__file__).parents[1] / "data" / "smi" / "dgx_h100_table_r550.txt").read_text()
    (tmp_path / "smi16.txt").write_text(table, encoding="utf-16")
    res = run_cli(["doctor", "--machine", "smi16.txt", "--json"])
    assert res.status in (0, 1), res.stderr
    assert '"pci_bus_id"' in res.stdout


HOSTILE = {
    "empty": b"",
    "binary": bytes(range(256)) * 16,
    "truncated-json": b'{"schema": "rankmap-profile/1", "hosts": [{"hostn',
    "bad-yaml": b"a: [1, 2\n  b: }\n",
}
FILE_OPTIONS = {
    "doctor --machine": ["doctor", "--machine", "{f}"],
    "check --machine": ["check", "--machine", "{f}", "--", "torchrun", "t.py"],
    "topo --topo-file": ["topo", "--topo-file", "{f}"],
    "topo --machine": ["topo", "--machine", "{f}"],
    "explain --machine": ["explain", "--machine", "{f}", "/dev/null"],
}


@pytest.mark.parametrize("kind", [*HOSTILE, "directory", "missing"])
@pytest.mark.parametrize("option", FILE_OPTIONS)
def test_hostile_files(run_cli, tmp_path: Path, option: str, kind: str):
    path = tmp_path / kind
    if kind == "directory":
        path.mkdir()
    elif kind != "missing":
        path.write_bytes(HOSTILE[kind])
    res = run_cli([a.replace("{f}", str(path)) for a in FILE_OPTIONS[option]])
    assert_one_line_error(res.status, res.stderr)
    assert res.stdout == ""


@pytest.mark.parametrize("kind", ["binary", "bad-yaml", "directory", "missing"])
def test_hostile_accelerate_config(run_cli, tmp_path: Path, kind: str):
    path = tmp_path / kind
    if kind == "directory":
        path.mkdir()
    elif kind != "missing":
        path.write_bytes(HOSTILE[kind])
    res = run_cli(
        ["check", "--machine", "dgx-h100", "--", "accelerate", "launch"]
        + ["--config_file", str(path), "t.py"]
    )
    assert_one_line_error(res.status, res.stderr)


@pytest.mark.parametrize("kind", ["binary", "empty", "directory"])
def test_hostile_shell_and_logs(run_cli, tmp_path: Path, kind: str):
    path = tmp_path / kind
    if kind == "directory":
        path.mkdir()
    else:
        path.write_bytes(HOSTILE[kind])
    res = run_cli(["check", "--machine", "dgx-h100", "--shell", str(path)])
    assert_one_line_error(res.status, res.stderr)
    if kind != "empty":  # an empty log is "nothing recognised" (RM003), by design
        res = run_cli(["explain", str(path)])
        assert_one_line_error(res.status, res.stderr)


@pytest.mark.parametrize("option", ["--html", "--save"])
def test_unwritable_outputs(run_cli, tmp_path: Path, option: str):
    cmd = (
        ["doctor", "--machine", "dgx-h100"]
        if option == "--save"
        else ["check", "--machine", "dgx-h100", "--", "torchrun", "t.py"]
    )
    for target in (tmp_path, tmp_path / "no" / "such" / "dir" / "x", Path("/proc/self/status")):
        argv = [*cmd[:3], option, str(target), *cmd[3:]]
        res = run_cli(argv)
        assert_one_line_error(res.status, res.stderr)


@pytest.mark.parametrize(
    "source",
    ["x = " + "-" * 2_000_000 + "1\n", "x = " + "(" * 300 + "1" + ")" * 300 + "\n"],
    ids=["unary-chain", "parens"],
)
def test_pathological_training_script_degrades_to_an_info(run_cli, tmp_path: Path, source):
    (tmp_path / "train.py").write_text(source)
    res = run_cli(
        ["check", "--machine", "dgx-h100", "--script", "train.py", "--json", "--"]
        + ["torchrun", "--nproc-per-node", "2", "train.py"]
    )
    assert res.status == 0, res.stderr
    assert "RM004" in res.stdout  # info "the script was not analysed", like any unparseable one


def test_shell_arithmetic_that_python_cannot_parse(run_cli, tmp_path: Path):
    (tmp_path / "job.sh").write_text(
        "N=$((" + "-" * 16_000 + "1))\ntorchrun --nproc-per-node 2 train.py\n"
    )
    res = run_cli(["check", "--machine", "dgx-h100", "--shell", "job.sh"])
    assert res.status in (0, 1), res.stderr


@pytest.mark.parametrize("option", ["--script", "--shell"])
def test_check_names_what_is_wrong_with_a_path(run_cli, tmp_path: Path, option: str):
    launch = ["--", "torchrun", "t.py"] if option == "--script" else []
    for path, says in ((tmp_path, "directory"), (Path("/dev/zero"), "not a regular file")):
        res = run_cli(["check", "--machine", "dgx-h100", option, str(path), *launch])
        assert_one_line_error(res.status, res.stderr)
        assert says in res.stderr


def test_bad_rankmap_machine_env_is_named_as_the_env_var(run_cli, tmp_path: Path):
    (tmp_path / "bin").write_bytes(bytes(range(256)))
    res = run_cli(["probe", "--timeout", "10"], env={"RANKMAP_MACHINE": str(tmp_path / "bin")})
    assert_one_line_error(res.status, res.stderr)
    assert "RANKMAP_MACHINE" in res.stderr and "--machine" not in res.stderr
