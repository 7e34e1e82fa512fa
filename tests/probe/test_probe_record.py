"""Launcher env parsing, one rank's record, and the single-process CLI (in-process)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from probe_helpers import SRC

from rankmap.adapters.rank_record import collect_record
from rankmap.probe.launch_env import parse_rank_env
from rankmap.probe.record import record_from_json


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {"RANK": "5", "LOCAL_RANK": "1", "WORLD_SIZE": "8", "LOCAL_WORLD_SIZE": "4",
             "GROUP_RANK": "1", "TORCHELASTIC_RUN_ID": "abc", "TORCHELASTIC_RESTART_COUNT": "2"},
            ("torchrun", 5, 8, 1, 4, 1, "abc", 2),
        ),
        (
            {"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_LOCALID": "3",
             "SLURM_NTASKS_PER_NODE": "4", "SLURM_NODEID": "0", "SLURM_JOB_ID": "77"},
            ("slurm", 3, 8, 3, 4, 0, "slurm77.0", 0),
        ),
        (
            {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_SIZE": "4",
             "OMPI_COMM_WORLD_LOCAL_RANK": "0", "OMPI_COMM_WORLD_LOCAL_SIZE": "2"},
            ("openmpi", 2, 4, 0, 2, None, "job", 0),
        ),
        (
            {"PMI_RANK": "1", "PMI_SIZE": "2", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "2"},
            ("mpich", 1, 2, 1, 2, None, "job", 0),
        ),
        (
            {"RANK": "1", "WORLD_SIZE": "2", "LOCAL_RANK": "1", "CROSS_RANK": "0",
             "LOCAL_SIZE": "2"},
            ("deepspeed", 1, 2, 1, 2, 0, "job", 0),
        ),
        ({}, ("none", 0, 1, None, None, None, "job", 0)),
    ],
)  # fmt: skip
def test_parse_rank_env(env: dict[str, str], expected: tuple[object, ...]) -> None:
    r = parse_rank_env(env)
    got = (r.launcher, r.rank, r.world_size, r.local_rank, r.local_world_size, r.node_rank,
           r.run_id, r.restart_count)  # fmt: skip
    assert got == expected


def test_bad_values_are_problems_not_crashes() -> None:
    r = parse_rank_env({"RANK": "x", "LOCAL_RANK": "", "WORLD_SIZE": "4(x2)"})
    assert r.rank == 0 and r.world_size == 4
    assert any("RANK='x'" in p for p in r.problems)


def test_record_from_profile_with_cvd_and_redacted_env() -> None:
    env = {
        "RANK": "1",
        "LOCAL_RANK": "1",
        "WORLD_SIZE": "2",
        "CUDA_VISIBLE_DEVICES": "2,3",
        "NCCL_SOCKET_IFNAME": "lo",
        "NCCL_IB_SECRET_KEY": "hunter2",
        "NCCL_HOSTID": "h1",
    }
    r = collect_record(env, machine="workstation-4gpu")
    assert (r.cuda_index, r.device_selected_by) == (1, "local_rank")
    assert (r.nvml_index, r.pci_bus_id) == (3, "0000:57:00.0")
    assert r.hostname == "ws-01" and r.identity_source == "profile:workstation-4gpu"
    assert r.boot_id == "62b6c1ef-d929-5c0c-8978-02baf220668a"
    assert r.nccl_hostid == "h1" and r.nccl_host_key == "hostid:h1"
    assert r.env["NCCL_IB_SECRET_KEY"] == "<redacted>"
    assert "hunter2" not in r.to_json().decode()
    assert r.interfaces is not None and "lo" in r.interfaces
    assert r.gpus is None  # only local rank 0 sends the inventory
    assert record_from_json(r.to_json()) == r


def test_record_device_argument_and_out_of_range() -> None:
    env = {"LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "0,1"}
    r = collect_record(env, machine="workstation-4gpu", device="cuda:2")
    assert r.device_selected_by == "argument"
    assert r.device_error is not None and "cuda:2" in r.device_error
    assert r.visible_uuids is not None and len(r.visible_uuids) == 2
    assert r.gpus is not None and len(r.gpus) == 4


def test_mig_profile_record_has_parent() -> None:
    r = collect_record({}, machine="a100-mig")
    assert r.uuid is not None and r.uuid.startswith("MIG-")
    assert r.mig_parent_uuid is not None and r.mig_parent_uuid.startswith("GPU-")


def test_single_process_cli_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    res = run_cli(["probe", "--machine", "dgx-h100", "--json"], env={"LOCAL_RANK": "3"})
    assert res.status == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema"] == "rankmap/1" and doc["command"] == "probe"
    assert doc["placements"][0]["cuda_index"] == 3
    assert doc["inventory"]["hosts"] == []  # local rank 3 does not send the inventory


def test_cli_bad_input_is_one_line_exit_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    for argv in (
        ["probe", "--timeout", "0"],
        ["probe", "--device", "gpu7"],
        ["probe", "--machine", "no-such-machine"],
    ):
        res = run_cli(argv)
        assert res.status == 2, (argv, res.stderr)
        assert res.stderr.startswith("rankmap: error:") and "Traceback" not in res.stderr


def test_cli_world_larger_than_rankmap_probes_is_exit_2(run_cli) -> None:  # type: ignore[no-untyped-def]
    """Rank 0 lists every rank's key: WORLD_SIZE=10^11 (a typo) must not exhaust memory."""
    env = {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "100000000000",
           "RANKMAP_MACHINE": "workstation-4gpu"}  # fmt: skip
    res = run_cli(["probe", "--timeout", "2"], env=env)
    assert res.status == 2, res.stderr
    assert "world size 100000000000: more ranks than rankmap probes (at most 262,144)" in res.stderr


def test_import_rankmap_and_probe_help_do_not_import_torch() -> None:
    code = (
        "import sys, rankmap, rankmap.probe\n"
        "from rankmap.cli import main\n"
        "try:\n    main(['probe', '--help'])\nexcept SystemExit:\n    pass\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code + "print('torch' in sys.modules)"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC)},
        timeout=60,
    )
    assert "--timeout S" in out.stdout
    assert out.stdout.strip().endswith("False")


def test_cuda_facts_cross_checked_with_nvml(machine) -> None:  # type: ignore[no-untyped-def]
    """CUDA's answer wins; NVML adds the nvidia-smi index; a disagreement becomes a note."""
    from rankmap.adapters.device import _from_view, _merge_cuda_nvml
    from rankmap.visibility import resolve_visible

    host = machine("workstation-4gpu")
    nvml = _from_view(resolve_visible(host, {"CUDA_VISIBLE_DEVICES": "1"}), host, 0)
    same = {"uuid": host.gpus[1].uuid, "pci_bus_id": host.gpus[1].pci_bus_id}
    out, notes = _merge_cuda_nvml(same, host, nvml, 0)
    assert out["nvml_index"] == 1 and notes == []
    other = {"uuid": host.gpus[2].uuid, "pci_bus_id": host.gpus[2].pci_bus_id}
    out, notes = _merge_cuda_nvml(other, host, nvml, 0)
    assert out["nvml_index"] == 2  # what CUDA says is what the rank uses
    assert notes and "0000:56:00.0" in notes[-1] and "0000:52:00.0" in notes[-1]
    mig_host = machine("a100-mig")
    mig = _from_view(resolve_visible(mig_host, {}), mig_host, 0)
    cuda = {"uuid": None, "pci_bus_id": mig_host.gpus[0].pci_bus_id}
    out, _ = _merge_cuda_nvml(cuda, mig_host, mig, 0)
    assert out["uuid"].startswith("MIG-") and out["mig_parent_uuid"] == mig_host.gpus[0].uuid


def test_a_bad_profile_from_the_environment_is_named_as_rankmap_machine() -> None:
    from rankmap.errors import InputError

    env = {"RANK": "0", "WORLD_SIZE": "1", "RANKMAP_MACHINE": "no-such-profile"}
    with pytest.raises(InputError) as err:
        collect_record(env)
    assert "RANKMAP_MACHINE" in err.value.message
    assert "--machine" not in err.value.message
    with pytest.raises(InputError) as err:
        collect_record(env, machine="no-such-profile")  # typed by the user: --machine stays
    assert "RANKMAP_MACHINE" not in err.value.message


@pytest.mark.parametrize("device", ["banana", 1.7, [0], True, "cuda:x"])
def test_a_device_that_is_not_one_is_refused_not_taken_for_cpu(device: object) -> None:
    # review 19: verify(device="banana") returned ok and checked nothing
    from rankmap.adapters.device import choose_index
    from rankmap.errors import InputError
    from rankmap.probe.launch_env import parse_rank_env

    with pytest.raises(InputError):
        choose_index(device, parse_rank_env({}), None, profile=True)


@pytest.mark.parametrize(("device", "want"), [(3, 3), ("cuda:2", 2), ("cpu", None), ("cuda", 0)])
def test_the_devices_verify_takes(device: object, want: int | None) -> None:
    from rankmap.adapters.device import choose_index
    from rankmap.probe.launch_env import parse_rank_env

    assert choose_index(device, parse_rank_env({}), None, profile=True)[0] == want


@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"RANK": "abc", "WORLD_SIZE": "2"}, "RANK='abc' is not an integer"),
        ({"RANK": "5", "WORLD_SIZE": "2"}, "outside its world"),
        ({"WORLD_SIZE": "0"}, "at least one rank"),
    ],
)
def test_launcher_variables_no_launcher_sets_are_refused(env: dict[str, str], says: str) -> None:
    # review 19: RANK=abc was rank 0 and waited for peers; RANK 5 of 2 was "store unreachable"
    from rankmap.errors import InputError
    from rankmap.probe import _check_rank_env

    with pytest.raises(InputError, match=says):
        _check_rank_env(env)


def test_a_local_rank_of_minus_one_means_not_distributed() -> None:
    from rankmap.adapters.device import choose_index

    assert choose_index(None, parse_rank_env({"LOCAL_RANK": "-1"}), None, profile=True)[0] == 0
