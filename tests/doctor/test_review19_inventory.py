"""Review 19: a paste that is no machine is refused, not read in part."""

from __future__ import annotations

import pytest

from rankmap.errors import InputError
from rankmap.inventory import parse_machine_text


def _listing(count: int) -> str:
    return "".join(
        f"GPU {i}: NVIDIA A100 (UUID: GPU-{i:08x}-aaaa-bbbb-cccc-dddddddddddd)\n"
        for i in range(count)
    )


def test_a_listing_with_an_index_of_1000_or_more_is_refused() -> None:
    with pytest.raises(InputError, match="1000 or more"):
        parse_machine_text(_listing(1200), source="paste")


def test_a_listing_of_a_real_machine_is_read_whole() -> None:
    (host,) = parse_machine_text(_listing(16), source="paste")
    assert len(host.gpus) == 16


def test_a_gpu_line_cut_before_its_uuid_is_noted_not_dropped_silently() -> None:
    (host,) = parse_machine_text(_listing(3) + "GPU 3: NVIDIA A100-SXM4-8", source="paste")
    assert len(host.gpus) == 3
    assert any("cuts a GPU line before its UUID" in e for e in host.gpus[-1].errors)
    (whole,) = parse_machine_text(_listing(3), source="paste")
    assert not any("cuts" in e for g in whole.gpus for e in g.errors)


def test_two_gpus_with_one_uuid_are_noted() -> None:
    line = "GPU {i}: NVIDIA A100 (UUID: GPU-11111111-2222-3333-4444-555555555500)\n"
    (host,) = parse_machine_text(line.format(i=0) + line.format(i=1), source="paste")
    assert any("same UUID as GPU 0" in e for e in host.gpus[1].errors)
    assert not any("same UUID" in e for e in host.gpus[0].errors)


def test_the_built_in_mig_profile_gives_its_instances_their_own_uuids() -> None:
    from rankmap.inventory import load_machine

    (host,) = load_machine("a100-mig")
    gpu = host.gpus[0]
    bodies = {m.uuid.removeprefix("MIG-") for m in gpu.mig_devices}
    assert gpu.uuid.removeprefix("GPU-") not in bodies and len(bodies) == len(gpu.mig_devices)
