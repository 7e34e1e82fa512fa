"""The wire decoder treats every peer as untrusted: a bad record is RM063 about its rank."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankmap.adapters.rank_record import collect_record
from rankmap.probe.collate import collate_raw
from rankmap.probe.columns import columns_fit, fitting_rows
from rankmap.probe.record import record_from_json, state_problem
from rankmap.probe.wire import MAX_OWN_BYTES, OWN_FIELDS, decode_many, encode


def parts(n: int = 4) -> tuple[list[bytes], dict[str, bytes]]:
    owns, shared = [], {}
    for r in range(n):
        env = {"RANK": str(r), "WORLD_SIZE": str(n), "LOCAL_RANK": str(r)}
        own, blob, digest = encode(collect_record(env, machine="workstation-4gpu"))
        owns.append(own)
        shared[digest] = blob
    return owns, shared


def own_values(own: bytes) -> list[object]:
    values = json.loads(own)
    assert isinstance(values, list)
    return values


def with_value(own: bytes, index: int, value: object) -> bytes:
    values = own_values(own)
    values[index] = value
    return json.dumps(values).encode()


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda o: b"\xff" + o, "not UTF-8"),
        (lambda o: o[:-5], "Expecting"),
        (lambda o: b'{"rank": 1}', "not a rankmap probe record"),
        (lambda o: b'["rankmap-own/9"]', "format 'rankmap-own/9'"),
        (lambda o: with_value(o, 1, "ffffffffffffffff"), "node part is missing"),
        (lambda o: with_value(o, 2, "1"), "rank is str"),
        (lambda o: with_value(o, 2, 5), "it says rank 5"),
        (lambda o: with_value(o, 2, True), "rank is bool"),
        (lambda o: with_value(o, 5, [1, 2]), "cuda_index is list"),
        (lambda o: with_value(o, 13, [7]), "device_notes is not a list of strings"),
        (lambda o: with_value(o, 15, [{"nvml_index": "0"}]), "gpus is not a list of GPU"),
        (lambda o: o[:-1] + b"," + b"9" * 5000 + b"]", "Exceeds the limit"),
        (lambda o: o[:-1] + b",1e309]", ""),  # extra trailing values (newer rankmap) are ignored
        (lambda o: o.rsplit(b",", 1)[0] + b",1e309]", "probe_ms out of range"),
        (lambda o: b"[" * 100_000, ""),
        (lambda o: o + b" " * MAX_OWN_BYTES, "record over the limit of 262144 bytes"),
        (lambda o: o + b'],["rankmap-own/1"', ""),  # smuggles a record into the bulk parse
    ],
)
def test_bad_record_is_unreadable_with_a_reason(make, reason: str) -> None:  # type: ignore[no-untyped-def]
    owns, shared = parts()
    owns[1] = make(owns[1])
    decoded = decode_many(owns, shared, [0, 1, 2, 3])
    if reason == "" and 1 not in decoded.unreadable:
        assert [r.rank for r in decoded.records] == [0, 1, 2, 3]
        return
    assert list(decoded.unreadable) == [1], decoded.unreadable
    assert reason in decoded.unreadable[1]
    assert [r.rank for r in decoded.records] == [0, 2, 3]


def test_bad_node_part_makes_its_ranks_unreadable_and_the_report_says_so() -> None:
    owns, shared = parts(2)
    digest = next(iter(shared))
    shared[digest] = b'["rankmap-shared/1", 0]'  # world size 0
    report = collate_raw(owns, shared, [0, 1], world_size=2)
    bad = [f for f in report.findings if f.code == "RM063"]
    assert len(bad) == 1 and bad[0].ranks == (0, 1)
    assert "world size 0 out of range" in bad[0].detail
    assert report.sections["missing_ranks"] == []
    assert [p.error for p in report.placements] == ["unreadable probe record"] * 2
    json.dumps(report.to_dict(), allow_nan=False)


def test_healthy_records_decode_unchanged_and_without_findings() -> None:
    owns, shared = parts()
    decoded = decode_many(owns, shared, [0, 1, 2, 3])
    assert decoded.unreadable == {}
    report = collate_raw(owns, shared, [0, 1, 2, 3], world_size=4)
    assert "RM063" not in [f.code for f in report.findings]


def test_record_from_json_raises_value_error_only() -> None:
    for bad in (b"\xff", b"[" * 100_000, b'{"rank": "x", "world_size": 1}', b"{}", b"NaN"):
        with pytest.raises(ValueError):
            record_from_json(bad)


def _field(name: str) -> int:
    return 2 + OWN_FIELDS.index(name)


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("cuda_index", True, "cuda_index is bool"),
        ("local_rank", False, "local_rank is bool"),
        ("cuda_index", 10**100, "cuda_index out of range"),
        ("pid", -(5 * 10**20), "pid out of range"),
        ("nvml_index", 2**40, "nvml_index out of range"),
        ("probe_ms", 10**13, "probe_ms out of range"),
        ("problems", ["x"] * 5000, "problems is not a list of strings"),
    ],
)
def test_bulk_path_holds_every_rule_of_the_schema(name: str, value: object, reason: str) -> None:
    """The records of 8 healthy ranks and one odd one: the bulk check must not let it through."""
    owns, shared = parts(8)
    owns[5] = with_value(owns[5], _field(name), value)
    decoded = decode_many(owns, shared, list(range(8)))
    assert decoded.unreadable == {5: reason}
    assert [r.rank for r in decoded.records] == [0, 1, 2, 3, 4, 6, 7]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
_ROWS = parts(4)[0]
_GPU_ROW = next(own_values(o) for o in _ROWS if own_values(o)[_field("gpus")])


@given(
    field_=st.sampled_from(OWN_FIELDS),
    value=_JSON,
    in_gpu=st.booleans(),
    gpu_key=st.sampled_from(["nvml_index", "uuid", "pci_bus_id", "name", "memory_mib", "x"]),
)
@settings(max_examples=150, deadline=None)
def test_column_check_is_sufficient_for_the_schema(
    field_: str, value: object, in_gpu: bool, gpu_key: str
) -> None:
    """Whatever one field (or one GPU entry's key) holds: when the column check passes, the
    schema passes every row - the bulk path is never weaker than state_problem."""
    rows = [own_values(o)[2:] for o in _ROWS]
    target = json.loads(json.dumps(_GPU_ROW))[2:]
    if in_gpu:
        target[OWN_FIELDS.index("gpus")][0][gpu_key] = value
    else:
        target[OWN_FIELDS.index(field_)] = value
    rows.append(target)
    if columns_fit(OWN_FIELDS, list(zip(*rows, strict=True))):
        assert all(state_problem(dict(zip(OWN_FIELDS, r, strict=True))) is None for r in rows)
    assert fitting_rows(OWN_FIELDS, rows[:-1]) == [True] * (len(rows) - 1)  # healthy rows fit


def test_one_odd_record_among_many_is_found_by_halving() -> None:
    rows = [own_values(o)[2:] for o in parts(4)[0]] * 300
    rows[777] = list(rows[777])
    rows[777][OWN_FIELDS.index("pid")] = "x"
    fits = fitting_rows(OWN_FIELDS, rows)
    assert fits.count(False) <= 256 and not fits[777]
