"""Memory analysis checked against the numbers XLA printed in the same committed dumps."""

from __future__ import annotations

import json

import pytest
from conftest import DUMPS, JAX011
from typer.testing import CliRunner

from xlainspect.analysis.memory import bytes_by_color, bytes_by_kind, live_curve, logical_curve, module_memory
from xlainspect.dump.buffers import read_buffer_assignment
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_text
from xlainspect.dump.live_ranges import LiveRange, LiveRanges, read_live_ranges
from xlainspect.dump.usage_report import read_total_bytes_used, read_usage_report
from xlainspect.errors import HloParseError


def _modules(root=DUMPS):
    return [
        (d.name, m)
        for d in sorted(root.iterdir())
        if d.is_dir()
        for m in load_dump(d).modules
        if m.file(kind="buffer-assignment")
    ]


MODULES = _modules()
TWINS = _modules(JAX011)
"""The jax 0.11.2 twins' modules (and its GPU scenario's): XLA's own totals hold there too."""


def _read(dump_module, kind, reader):
    found = dump_module.file(kind=kind)
    return reader(read_text(found.path), str(found.path))


def test_every_fixture_module_has_a_buffer_assignment_and_report():
    # fleet_divergence: 4 hosts x 3 compiles; multihost_straggler 12 and multidevice_cpu 1 (main's hosts);
    # profile_host_bound 1 and profile_eager_ops 4 (step's CPU step scenarios); the 5 profile pairs 1 each;
    # multihost_frames 12; slow_device 1
    assert (len(MODULES), len(TWINS)) == (189, 57)
    assert all(m.file(kind="memory-usage-report") for _, m in MODULES + TWINS)


def _ids(modules, prefix=""):
    return [f"{prefix}{s}-{m.module_id}" for s, m in modules]


@pytest.mark.parametrize(("scenario", "dump_module"), MODULES + TWINS, ids=_ids(MODULES) + _ids(TWINS, "jax011-"))
def test_allocation_totals_equal_what_xla_printed(scenario, dump_module):
    assignment = _read(dump_module, "buffer-assignment", read_buffer_assignment)
    report = _read(dump_module, "memory-usage-report", read_usage_report)
    total = sum(a.size for a in assignment.allocations)
    assert report.total_bytes == total
    assert {s.color: s.total_bytes for s in report.spaces} == bytes_by_color(assignment)
    assert sum(bytes_by_kind(assignment).values()) == total
    if dump_module.file(kind="buffer-assignment-values"):
        assert _read(dump_module, "buffer-assignment-values", lambda text, path: read_total_bytes_used(text)) == total


LIVE = [(s, m) for s, m in MODULES if m.file(kind="live-range")]
LIVE_TWINS = [(s, m) for s, m in TWINS if m.file(kind="live-range")]


@pytest.mark.parametrize(("scenario", "dump_module"), LIVE + LIVE_TWINS, ids=_ids(LIVE) + _ids(LIVE_TWINS, "jax011-"))
def test_live_bytes_at_xla_peak_equal_its_cumulative(scenario, dump_module):
    """XLA lists the values live at its peak with a running sum of logical bytes: same sum here."""
    assignment = _read(dump_module, "buffer-assignment", read_buffer_assignment)
    live = _read(dump_module, "live-range", read_live_ranges)
    assert logical_curve(live, assignment)[live.reported_peak_time] == live.reported_peak_bytes


def _module(scenario, module_id, modules=MODULES):
    return next(m for s, m in modules if s == scenario and m.module_id == module_id)


@pytest.mark.parametrize("modules", [MODULES, TWINS], ids=["jax0.10.2", "jax0.11.2"])
def test_clean_run_memory(modules):
    memory = module_memory(_module("clean_run", 0, modules), top=3)
    assert (memory.total_bytes, memory.reported_total_bytes) == (1532, 1532)
    assert memory.by_kind == {
        "parameter": 1188,
        "constant": 0,
        "output": 64,
        "thread-local": 24,
        "preallocated-temp": 256,
        "temporary": 0,
    }
    # dot.2 (live 5-8) is still an operand of multiply_subtract_fusion at point 8: 1452 B, above
    # the 1356 B XLA printed for its point 9.
    assert (memory.peak_bytes, memory.peak_time, memory.peak_instruction) == (1452, 8, "multiply_subtract_fusion")
    assert memory.reported_peak_bytes == 1356
    assert len(memory.curve) == 13 and memory.curve[9] == 1356
    first = memory.top[0]
    assert (first.name, first.shape, first.bytes, first.kind, first.op_name) == (
        "x.1{}",
        "f32[32,8]{1,0}",
        1024,
        "parameter",
        "x",
    )
    assert [b.name for b in memory.top[1:]] == ["bitcast_bitcast_fusion{}", "dot.2{}"]


def test_tpu_v5e_layouts_memory_counts_padded_bytes():
    memory = module_memory(_module("tpu_v5e", 0), top=2)
    assert memory.total_bytes == 408100
    assert [(s.color, s.name, s.bytes) for s in memory.spaces] == [
        (0, "default", 340992),
        (1, "vmem", 66560),
        (2, "smem", 36),
        (6, "color_6", 512),
    ]
    assert (memory.peak_bytes, memory.peak_time, memory.peak_instruction) == (122368, 78, "tuple.3")
    assert memory.reported_peak_bytes == 55834
    copy = memory.top[0]
    assert (copy.name, copy.shape, copy.bytes, copy.logical_bytes) == (
        "copy.18{}",
        "bf16[5,1000]{1,0:T(8,128)(2,1)}",
        16384,
        10000,
    )


def test_module_without_live_range_file_has_totals_only():
    memory = module_memory(_module("tpu_v5e", 29))
    assert (memory.total_bytes, memory.peak_bytes, memory.top) == (505884, None, ())


def test_shared_slice_counts_once():
    """Two values in one slice (an in-place update) are one piece of memory. Inline ranges, not a dump."""
    live = LiveRanges(3, ("p", "dus", "root"), (LiveRange("p", (), 0, 1), LiveRange("dus", (), 1, 3)), None, None)
    assert live_curve(live, lambda r: (("alloc0", 0), 100)) == (100, 100, 100, 100)
    assert live_curve(live, lambda r: (r.key, 100)) == (100, 200, 100, 100)


def test_older_report_format_total_bytes_used():
    """Older XLA printed one total; snippet in that format (not a dump)."""
    report = read_usage_report("Total bytes used: 4096 (4.0KiB)\n\nAllocations sorted by size:\n")
    assert (report.total_bytes, report.spaces) == (4096, ())


def test_bad_live_range_line_names_the_place():
    text = "HloLiveRange (max 2):\n  InstructionSequence:\n    0:p\n  BufferLiveRange:\n    p{}:0-\n"
    with pytest.raises(HloParseError) as caught:
        read_live_ranges(text, "x-live-range.txt")
    assert (caught.value.path, caught.value.line) == ("x-live-range.txt", 5)
    with pytest.raises(HloParseError):
        read_usage_report("hello\n", "r.txt")


def test_a_truncated_buffer_assignment_is_named_and_skipped_not_counted_in_part(tmp_path):
    """The real tpu_v5e file cut mid-line, as a killed job leaves it: its first two allocations alone
    once counted 33,280 of the 505,884 bytes XLA reports."""
    import shutil

    from xlainspect import memory_report

    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "tpu_v5e", dump)
    cut = next(dump.glob("module_0029.*-buffer-assignment.txt"))
    cut.write_text(cut.read_text()[:200])
    with pytest.raises(HloParseError) as caught:
        read_buffer_assignment(cut.read_text(), str(cut))
    assert (caught.value.line, "truncated" in str(caught.value)) == (5, True)
    report = memory_report(dump)
    assert [s.path.name for s in report.skipped] == [cut.name]
    assert "module_0029.jit_layouts" not in [m.module for m in report.modules]
    assert len(report.modules) == len(load_dump(DUMPS / "tpu_v5e").modules) - 1


def test_a_buffer_assignment_cut_anywhere_within_a_line_does_not_read():
    """Cut at any character that is not a line's end (a shape cut short still looks like a shape), or
    right after an allocation's header: XLA ends every line with a newline and prints every
    allocation with its values (`BufferAllocation::ToString`)."""
    cut = next((DUMPS / "tpu_v5e").glob("module_0029.*-buffer-assignment.txt"))
    text = cut.read_text()
    read, cuts = [], range(len("BufferAssignment:\n") + 1, len(text))
    for end in cuts:
        try:
            read_buffer_assignment(text[:end], str(cut))
        except HloParseError:
            continue
        read.append(end)
    line_ends = [end for end in cuts if text[end - 1] == "\n"]
    last_lines = {end: text[: end - 1].rsplit("\n", 1)[-1] for end in line_ends}
    after_a_header = [e for e, line in last_lines.items() if line.startswith("allocation") and "temp" not in line]
    assert len(read) == 123 and read == [end for end in line_ends if end not in after_a_header]


def test_a_buffer_assignment_cut_between_lines_is_named_and_skipped(tmp_path):
    """Cut after a whole value line (mid-allocation) or between two allocations, the file reads whole:
    the total XLA printed in the module's memory-usage report tells it lost its last allocations."""
    import shutil

    from xlainspect import memory_report

    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "tpu_v5e", dump)
    cut = next(dump.glob("module_0029.*-buffer-assignment.txt"))
    lines = cut.read_text().splitlines(keepends=True)
    between = next(i for i in range(41, len(lines)) if lines[i].startswith("allocation"))
    cut.write_text("".join(lines[:between]))
    with pytest.raises(HloParseError) as caught:
        module_memory(next(m for m in load_dump(dump).modules if m.module_id == 29))
    assert "505884" in str(caught.value) and "truncated" in str(caught.value)
    report = memory_report(dump)
    assert [s.path.name for s in report.skipped] == [cut.name]
    assert "module_0029.jit_layouts" not in [m.module for m in report.modules]


def test_an_older_buffer_assignment_ends_with_total_bytes_used():
    """Older XLA printed `Total bytes used: N` after the allocations in the same file (quoting
    `BufferAssignment::ToString`'s syntax): allocations that do not sum to it were cut."""
    head = "BufferAssignment:\nallocation 0: size 4, parameter 0, shape |s32[]| at ShapeIndex {}:\n"
    whole = head + " value: <0 p @0> (size=4,offset=0): s32[]\n\nTotal bytes used: 4 (4B)\n"
    assert [a.size for a in read_buffer_assignment(whole).allocations] == [4]
    with pytest.raises(HloParseError, match="sum to 4 bytes, XLA's total is 8"):
        read_buffer_assignment(whole.replace("used: 4", "used: 8"))


def test_a_file_argument_reads_its_module_not_its_folder(tmp_path):
    """`memory FILE` in a folder like /tmp: a symbolic link loop and another module beside the file
    are never walked nor read; the file's own module's side files (by its name) are."""
    import shutil

    from xlainspect import memory_report

    for found in (DUMPS / "clean_run").glob("module_0000.*.*"):
        shutil.copy(found, tmp_path)
    other = next((DUMPS / "tpu_v5e").glob("module_0029.*-buffer-assignment.txt"))
    (tmp_path / other.name.replace("0029", "0001")).write_text("damaged\n")
    (tmp_path / "loop").symlink_to(".")
    chosen = next(tmp_path.glob("module_0000.*-buffer-assignment.txt"))
    report = memory_report(chosen)
    assert [(m.function, m.total_bytes, m.peak_bytes) for m in report.modules] == [("jit_train_step", 1532, 1452)]
    assert report.skipped == []


def test_cli_json_and_html(tmp_path):
    from xlainspect.cli.app import app

    page = tmp_path / "memory.html"
    result = CliRunner().invoke(
        app, ["memory", str(DUMPS / "clean_run"), "--format", "json", "--top", "2", "--html", str(page)]
    )
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    module = document["modules"][0]
    assert (module["function"], module["total_bytes"], module["peak_bytes"]) == ("jit_train_step", 1532, 1452)
    assert [(b["name"], b["shape"], b["bytes"], b["op_name"]) for b in module["top"]] == [
        ("x.1{}", "f32[32,8]{1,0}", 1024, "x"),
        (
            "bitcast_bitcast_fusion{}",
            "f32[32,1]{1,0}",
            128,
            "jit(train_step)/transpose(jvp())/mul;jit(train_step)/transpose(jvp())/broadcast_in_dim",
        ),
    ]
    html = page.read_text()
    assert "<svg" in html and "<polyline" in html and "http" not in html.replace("http-equiv", "")


def test_cli_function_filter_and_csv():
    from xlainspect.cli.app import app

    result = CliRunner().invoke(app, ["memory", str(DUMPS / "tpu_v5e"), "--function", "jit_dots", "-f", "csv"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 2 and lines[1].startswith("module_0219.jit_dots,jit_dots,238600,238600,")


def test_an_unparsable_hlo_text_is_named_and_its_memory_still_counted(tmp_path):
    """The HLO text gives the buffers' op_names only: where it does not parse, the bytes stand, the
    op_names are unknown, and the file is a skipped file (it was dropped silently)."""
    import shutil

    from xlainspect import memory_report

    dump = tmp_path / "dump"
    shutil.copytree(DUMPS / "clean_run", dump)
    whole = memory_report(DUMPS / "clean_run")
    hlo = load_dump(dump).modules[0].hlo_path()
    hlo.write_text(hlo.read_text().replace(" parameter(", " parameter[", 1))
    report = memory_report(dump)
    assert [s.path for s in report.skipped] == [hlo]
    assert "parameter[" in report.skipped[0].reason
    (before, after) = (whole.modules[0], report.modules[0])
    assert (after.module, after.peak_bytes, after.total_bytes) == (before.module, before.peak_bytes, before.total_bytes)
    assert {b.op_name for b in after.top} == {None} != {b.op_name for b in before.top}
