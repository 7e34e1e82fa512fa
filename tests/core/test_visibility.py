"""CUDA_VISIBLE_DEVICES / CUDA_DEVICE_ORDER / NVIDIA_VISIBLE_DEVICES / Slurm -> what a process sees."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rankmap.model import Host
from rankmap.visibility import resolve_visible

Load = Callable[[str], Host]


def nvml(view) -> list[int]:  # type: ignore[no-untyped-def]
    return [d.nvml_index for d in view.devices]


def test_unset_shows_all_in_order(machine: Load) -> None:
    view = resolve_visible(machine("dgx-h100"), {})
    assert nvml(view) == list(range(8))
    assert [d.cuda_index for d in view.devices] == list(range(8))
    assert view.devices[0].pci_bus_id == "0000:18:00.0"


def test_issue_example_cut_at_out_of_range(machine: Load) -> None:
    host = machine("dgx-h100")
    prefix = host.gpus[5].uuid[:12]
    view = resolve_visible(host, {"CUDA_VISIBLE_DEVICES": f"3,{prefix},0,9,1"})
    assert nvml(view) == [3, 5, 0]
    reasons = {d.entry: d.reason for d in view.dropped}
    assert reasons["9"] == "out_of_range"
    assert reasons["1"] == "after_invalid"
    assert any("9" in n and "does not exist" in n for n in view.notes)


@pytest.mark.parametrize("value", ["", "-1", "NoDevFiles", "0,0", "1,GPU-", "x"])
def test_values_that_hide_everything(machine: Load, value: str) -> None:
    view = resolve_visible(machine("workstation-4gpu"), {"CUDA_VISIBLE_DEVICES": value})
    if value == "1,GPU-":  # "GPU-" is an ambiguous prefix of all four: list cut after 1
        assert nvml(view) == [1]
        return
    assert view.devices == ()
    assert view.hidden_all
    assert view.notes


def test_duplicate_uuid_and_index_of_same_gpu_empties_set(machine: Load) -> None:
    host = machine("workstation-4gpu")
    view = resolve_visible(host, {"CUDA_VISIBLE_DEVICES": f"0,{host.gpus[0].uuid}"})
    assert view.devices == ()
    assert view.dropped[-1].reason == "duplicate"


def test_strtoul_prefix_and_spaces(machine: Load) -> None:
    view = resolve_visible(machine("workstation-4gpu"), {"CUDA_VISIBLE_DEVICES": "1gpu2, 2ampere"})
    assert nvml(view) == [1, 2]


def test_reorder(machine: Load) -> None:
    view = resolve_visible(machine("workstation-4gpu"), {"CUDA_VISIBLE_DEVICES": "2,1"})
    assert nvml(view) == [2, 1]
    assert view.devices[0].cuda_index == 0


def test_fastest_first_differs_on_mixed_machine(machine: Load) -> None:
    host = machine("mixed-2gpu")
    default = resolve_visible(host, {})
    assert nvml(default) == [1, 0]
    assert default.order_differs
    pci = resolve_visible(host, {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert nvml(pci) == [0, 1]
    # integer entries index CUDA's order
    assert nvml(resolve_visible(host, {"CUDA_VISIBLE_DEVICES": "0"})) == [1]


def test_homogeneous_machine_orders_agree(machine: Load) -> None:
    view = resolve_visible(machine("dgx-a100"), {})
    assert not view.order_differs


def test_mig_single_instance_per_process(machine: Load) -> None:
    host = machine("a100-mig")
    migs = host.gpus[0].mig_devices
    view = resolve_visible(host, {})
    assert len(view.devices) == 1
    assert view.devices[0].mig is not None
    assert view.devices[0].uuid == migs[0].uuid
    two = resolve_visible(host, {"CUDA_VISIBLE_DEVICES": f"{migs[2].uuid},{migs[3].uuid}"})
    assert [d.uuid for d in two.devices] == [migs[2].uuid]
    assert two.dropped[0].reason == "mig_single"
    assert two.devices[0].mig is not None
    assert two.devices[0].mig.parent_uuid == host.gpus[0].uuid
    assert two.devices[0].pci_bus_id == host.gpus[0].pci_bus_id


def test_legacy_mig_spelling(machine: Load) -> None:
    host = machine("a100-mig")
    gpu = host.gpus[0]
    m = gpu.mig_devices[1]
    view = resolve_visible(host, {"CUDA_VISIBLE_DEVICES": f"MIG-{gpu.uuid}/{m.gi}/{m.ci}"})
    assert [d.uuid for d in view.devices] == [m.uuid]


def test_nvidia_visible_devices_filters_and_renumbers(machine: Load) -> None:
    host = machine("dgx-h100")
    view = resolve_visible(host, {"NVIDIA_VISIBLE_DEVICES": "6,2"})
    assert nvml(view) == [2, 6]
    inner = resolve_visible(host, {"NVIDIA_VISIBLE_DEVICES": "6,2", "CUDA_VISIBLE_DEVICES": "1"})
    assert nvml(inner) == [6]
    assert resolve_visible(host, {"NVIDIA_VISIBLE_DEVICES": "none"}).devices == ()


def test_slurm_constrained_devices(machine: Load) -> None:
    host = machine("dgx-h100")
    constrained = resolve_visible(host, {"SLURM_STEP_GPUS": "4,5", "CUDA_VISIBLE_DEVICES": "0,1"})
    assert nvml(constrained) == [4, 5]
    unconstrained = resolve_visible(host, {"SLURM_STEP_GPUS": "4,5", "CUDA_VISIBLE_DEVICES": "4,5"})
    assert nvml(unconstrained) == [4, 5]
