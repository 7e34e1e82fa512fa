"""Every bus-id spelling from reference/nccl.md and reference/nvidia_smi_formats.md."""

import pytest

from rankmap.pci import PciAddress, nccl_form, normalize_bus_id, parse_bus_id, parse_nccl_bus_id

# (NCCL prints, sysfs form, NVML form) - reference/nccl.md (a) conversion table
NCCL_TABLE = [
    ("4f000", "0000:4f:00.0", "00000000:4F:00.0"),
    ("1000", "0000:01:00.0", "00000000:01:00.0"),
    ("f000", "0000:0f:00.0", "00000000:0F:00.0"),
    ("a4000", "0000:a4:00.0", "00000000:A4:00.0"),
    ("e4000", "0000:e4:00.0", "00000000:E4:00.0"),
    ("10", "0000:00:01.0", "00000000:00:01.0"),
    ("40", "0000:00:04.0", "00000000:00:04.0"),
    ("50", "0000:00:05.0", "00000000:00:05.0"),
    ("196000", "0001:96:00.0", "00000001:96:00.0"),
    ("c8000", "0000:c8:00.0", "00000000:C8:00.0"),
    ("31000", "0000:31:00.0", "00000000:31:00.0"),
    ("2000", "0000:02:00.0", "00000000:02:00.0"),
    ("3000", "0000:03:00.0", "00000000:03:00.0"),
    ("9b000", "0000:9b:00.0", "00000000:9B:00.0"),
]


@pytest.mark.parametrize(("nccl", "sysfs", "nvml"), NCCL_TABLE)
def test_nccl_number_round_trips_through_every_spelling(nccl: str, sysfs: str, nvml: str) -> None:
    addr = parse_nccl_bus_id(nccl)
    assert addr.sysfs() == sysfs
    assert addr.nvml() == nvml
    assert parse_bus_id(sysfs) == addr
    assert parse_bus_id(nvml) == addr
    assert nccl_form(nvml) == nccl
    assert nccl_form(sysfs) == nccl


def test_canonical_form_is_four_digit_domain_upper_case() -> None:
    assert normalize_bus_id("00000000:4f:00.0") == "0000:4F:00.0"
    assert normalize_bus_id("0000:4F:00.0") == "0000:4F:00.0"
    assert normalize_bus_id("4f000") == "0000:4F:00.0"
    assert normalize_bus_id("0x4f000") == "0000:4F:00.0"


def test_nccl_tests_spellings() -> None:
    assert parse_bus_id("[0x4f]") == PciAddress(0, 0x4F, 0, 0)
    assert parse_bus_id("[0000:4f:00]") == PciAddress(0, 0x4F, 0, 0)


def test_driver_375_four_digit_domain() -> None:
    # pytorch/examples#115: driver 375.39 printed 0000:01:00.0
    assert normalize_bus_id("0000:01:00.0") == normalize_bus_id("00000000:01:00.0")


def test_packing_formula_matches_reference() -> None:
    # reference/cuda_devices.md: NCCL number = (domain<<20)|(bus<<12)|(device<<4)
    assert PciAddress(1, 0x96, 0, 0).nccl_int() == (1 << 20) | (0x96 << 12)


@pytest.mark.parametrize("bad", ["", "zz:00.0", "0000:4f", "hello", "-1", "0000:4f:00.9", "[0x]"])
def test_garbage_is_rejected(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_bus_id(bad)


@pytest.mark.parametrize("bad", ["4f", "222", "fff", "4ff08"])
def test_packed_number_of_no_pci_address_is_rejected(bad: str) -> None:
    # a PCI device has 5 bits, a function 3: "4f" would be device 4 function 15
    with pytest.raises(ValueError):
        parse_nccl_bus_id(bad)
