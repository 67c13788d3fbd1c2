"""The columnar XSpace reader (dump/xspace.py over dump/wire.py) against the protobuf runtime's own parse:
every event, time and stat of the committed traces; random events the runtime encodes; damaged files."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from xlainspect.dump import wire
from xlainspect.dump.xplane import find_trace_files, read_trace
from xlainspect.dump.xspace import _by_start, _kept_stats, message_class
from xlainspect.errors import XlaInspectError

PROFILES = REPO / "fixtures" / "profiles"
TRACES = [
    PROFILES / "profile_steps",
    PROFILES / "multihost_straggler" / "plugins" / "profile" / "2026_11_28_04_28_39" / "host_1.xplane.pb",
    PROFILES / "gpu_profile",
]


def _runtime_events(path: Path) -> list[tuple[object, ...]]:
    """Every timed event as the protobuf runtime parses the file: (plane, line, name, start, duration,
    stats), times from the first event, TraceMe's own `_` stats left out (the reader keeps none)."""
    data = path.read_bytes()
    space = message_class("XSpace").FromString(gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data)
    found: list[tuple[object, ...]] = []
    for plane in space.planes:
        names = {e.key: e.value.name for e in plane.stat_metadata}
        metadata = {e.key: e.value for e in plane.event_metadata}
        for line in plane.lines:
            for event in line.events:
                if not event.duration_ps:
                    continue
                meta = metadata.get(event.metadata_id)
                stats = {**_stats(meta.stats if meta else [], names), **_stats(event.stats, names)}
                start = line.timestamp_ns + event.offset_ps / 1000
                name = meta.name if meta else ""
                found.append((plane.name, line.display_name or line.name, name, start, event.duration_ps / 1000, stats))
    origin = min(e[3] for e in found)
    return sorted([(p, li, n, s - origin, d, sorted(st.items())) for p, li, n, s, d, st in found], key=repr)


def _stats(stats: object, names: dict[int, str]) -> dict[str, object]:
    found: dict[str, object] = {}
    for stat in stats:  # type: ignore[attr-defined]
        fields = [(f.name, v) for f, v in stat.ListFields() if f.name != "metadata_id"]
        value = fields[0][1] if fields else None
        if fields and fields[0][0] == "ref_value":
            value = names.get(value, "")
        name = names.get(stat.metadata_id, str(stat.metadata_id))
        if not name.startswith("_"):
            found[name] = value
    return found


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_every_event_equals_the_protobuf_runtimes(path):
    [xspace] = find_trace_files(path)
    ours = read_trace(path).events
    theirs = _runtime_events(xspace)
    mine = sorted(
        [(e.plane, e.line, e.name, e.start_ns, e.duration_ns, sorted(e.stats.items())) for e in ours], key=repr
    )
    assert len(mine) == len(theirs) > 1000
    assert mine == theirs


def test_columns_answer_as_the_objects_do():
    """profile_steps: 6 step markers (step_num 0..5), XLA:CPU's op events with their module and op."""
    events = read_trace(PROFILES / "profile_steps").events
    numbers, has = events.ints("step_num")
    assert sorted(numbers[has].tolist()) == [0, 1, 2, 3, 4, 5]
    modules = events.codes("hlo_module")
    assert {events.strings[c] for c in np.unique(modules[modules >= 0])} == {"jit_train_step"}
    row = int(np.flatnonzero(events.has("hlo_op"))[0])
    [event] = events.select([row])
    assert event.stats["hlo_module"] == events.value("hlo_module", row) == "jit_train_step"
    assert event.stats["hlo_op"] == events.value("hlo_op", row) and event.row == row


_STAT = st.tuples(
    st.integers(1, 300),
    st.one_of(
        st.tuples(st.just("int64_value"), st.integers(-(2**63), 2**63 - 1)),
        st.tuples(st.just("uint64_value"), st.integers(0, 2**64 - 1)),
        st.tuples(st.just("double_value"), st.floats(allow_nan=False)),
        st.tuples(st.just("str_value"), st.text(max_size=20)),
        st.tuples(st.just("ref_value"), st.integers(0, 2**40)),
    ),
)
_EVENT = st.tuples(st.integers(0, 2**40), st.integers(0, 2**62), st.integers(0, 2**62), st.lists(_STAT, max_size=6))


@settings(max_examples=60, deadline=None)
@given(st.lists(_EVENT, min_size=1, max_size=40))
def test_wire_decode_equals_the_runtime_on_random_events(events):
    """XEvents the protobuf runtime writes, decoded many at once by `wire.decode`: every field and stat value."""
    line = message_class("XLine")()
    for metadata_id, offset, duration, stats in events:
        event = line.events.add(metadata_id=metadata_id, offset_ps=offset, duration_ps=duration)
        for stat_id, (field, value) in stats:
            setattr(event.stats.add(metadata_id=stat_id), field, value)
    data = line.SerializeToString()
    starts, ends, _ = wire.repeated(data, 0, len(data), 4)
    buffer = np.frombuffer(data, np.uint8)
    decoded = wire.decode(buffer, starts, ends)
    for number, k in ((1, 0), (2, 1), (3, 2)):
        dense = np.zeros(len(events), np.int64)
        if number in decoded.owner:
            dense[decoded.owner[number]] = decoded.value[number]
        assert dense.tolist() == [e[k] for e in events]
    owner = decoded.owner.get(4, np.zeros(0, np.int64))
    order = np.argsort(owner, kind="stable")
    stats = wire.decode(buffer, decoded.value.get(4, owner)[order], decoded.end.get(4, owner)[order])
    expected = [s for e in events for s in e[3]]
    assert len(owner) == len(expected)
    for k, (stat_id, (field, value)) in enumerate(expected):
        number = {"double_value": 2, "uint64_value": 3, "int64_value": 4, "str_value": 5, "ref_value": 7}[field]
        at = int(np.flatnonzero(stats.owner[number] == k)[0])
        assert int(stats.value[1][np.flatnonzero(stats.owner[1] == k)[0]]) == stat_id
        got = int(stats.value[number][at])
        if field == "double_value":
            assert np.array(got, np.int64).view(np.float64) == value
        elif field == "str_value":
            assert bytes(buffer[got : stats.end[number][at]]).decode() == value
        elif field == "uint64_value":
            assert got & (2**64 - 1) == value
        else:
            assert got == value


@pytest.mark.parametrize("keep", [0.1, 0.5, 0.9, 0.999])
def test_a_cut_trace_is_an_input_error_naming_the_file(tmp_path, keep):
    data = PROFILES / "multihost_straggler" / "plugins" / "profile" / "2026_11_28_04_28_39" / "host_1.xplane.pb"
    whole = data.read_bytes()
    cut = tmp_path / "host.xplane.pb"
    cut.write_bytes(whole[: int(len(whole) * keep)])
    with pytest.raises(XlaInspectError, match=r"host\.xplane\.pb: not an XPlane profile"):
        read_trace(cut)


def test_a_foreign_file_is_an_input_error(tmp_path):
    foreign = tmp_path / "notes.xplane.pb"
    foreign.write_bytes(b"this is a text file, not a profile\n" * 20)
    with pytest.raises(XlaInspectError, match="not an XPlane profile"):
        read_trace(foreign)


def test_a_long_walk_tells_what_it_passed_and_finds_the_same_events(monkeypatch):
    """`wire.repeated` tells its caller of each `PASSED_BYTES` walked (the reader gives those pages back while
    the line before decodes): the ranges it tells are consecutive, start at the message and end at or after
    each told boundary, and the events found are the same as in one untold walk."""
    [xspace] = find_trace_files(PROFILES / "profile_steps")
    data = xspace.read_bytes()
    plane_start, plane_end = max(
        ((s, e) for n, _, s, e in wire.fields(data, 0, len(data)) if n == 1), key=lambda r: r[1] - r[0]
    )
    line_starts, line_ends, _ = wire.repeated(data, plane_start, plane_end, 3)
    longest = int(np.argmax(line_ends - line_starts))
    start, end = int(line_starts[longest]), int(line_ends[longest])
    whole = wire.repeated(data, start, end, 4)
    monkeypatch.setattr(wire, "PASSED_BYTES", 256)
    told: list[tuple[int, int]] = []
    walked = wire.repeated(data, start, end, 4, lambda a, b: told.append((a, b)))
    assert walked[0].tolist() == whole[0].tolist() and walked[1].tolist() == whole[1].tolist()
    longest_field = int((whole[1] - whole[0]).max()) + 11  # key and length: at most 11 bytes
    assert end - start > 40 * 256
    assert (end - start) // (256 + longest_field) <= len(told) <= (end - start) // 256
    assert told[0][0] == start
    assert all(b - a >= 256 and b == c for (a, b), (c, _) in zip(told, told[1:]))
    assert told[-1][1] <= end


def test_stats_are_kept_by_their_metadata_id_in_whichever_order_their_fields_come():
    """`_kept_stats` drops the stats of the dropped metadata ids before decoding their values, reading each
    one's first field; a stat whose fields come value first (a concatenation of two XStats is one XStat,
    protobuf merges them) is decoded whole and kept or dropped by its id all the same."""
    stat = message_class("XStat")
    parts = [
        stat(metadata_id=3, int64_value=7).SerializeToString(),  # kept
        stat(metadata_id=9, int64_value=8).SerializeToString(),  # dropped
        stat(int64_value=5).SerializeToString() + stat(metadata_id=4).SerializeToString(),  # kept, id last
        stat(ref_value=2).SerializeToString() + stat(metadata_id=9).SerializeToString(),  # dropped, id last
        stat(metadata_id=5, str_value="x").SerializeToString(),  # kept
    ]
    data = b"".join(parts)
    ends = np.cumsum([len(p) for p in parts])
    starts = ends - [len(p) for p in parts]
    which, ids, fields = _kept_stats(np.frombuffer(data, np.uint8), starts, ends, np.array([9], np.int64))
    assert ids.tolist() == [3, 4, 5] and which.tolist() == [0, 2, 4]
    assert dict(zip(fields.owner[4].tolist(), fields.value[4].tolist())) == {0: 7, 1: 5}  # by round, not by stat
    assert fields.owner[5].tolist() == [2] and bytes(data[fields.value[5][0] : fields.end[5][0]]) == b"x"


def test_a_negative_length_is_a_wire_error_not_a_loop():
    """A length-delimited field whose 10-byte varint length is negative as an int64 (a damaged file; the
    test's bytes: key 0x22, field 4 of type 2, then -11 in two's complement, back to the key) would loop the decoder: an error."""
    data = np.frombuffer(bytes([0x22, 0xF5, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0, 0]), np.uint8)
    with pytest.raises(wire.WireError, match="past the end"):
        wire.decode(data, np.array([0]), np.array([len(data)]))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 4)), max_size=200))
def test_events_are_ordered_as_lexsort_orders_them(events):
    """`_by_start` (a stable sort by start, then the events that share a start sorted again) orders events
    as `np.lexsort((-duration, start))` does: by start, the longer first, then the files' order; here with
    many ties, which real traces have few of."""
    start = np.array([float(s) for s, _ in events])
    duration = np.array([float(d) for _, d in events])
    assert _by_start(start, duration).tolist() == np.lexsort((-duration, start)).tolist()
