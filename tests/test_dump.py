"""Dump directories: file names classified as XLA writes them (reference §3), files grouped into compiles."""

from __future__ import annotations

import dataclasses
import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest import DUMPS, JAX011, corpus_files, hlo_fixture_files
from typer.testing import CliRunner

from xlainspect.cli.app import app
from xlainspect.dump.directory import load_dump
from xlainspect.dump.files import read_bytes, read_first_line_and_tail, read_text
from xlainspect.dump.headers import TAIL_BYTES, header_line, last_line
from xlainspect.dump.names import classify, file_module_id
from xlainspect.dump.scan import scan_dump, scan_listed
from xlainspect.dump.selection import select_modules
from xlainspect.errors import DumpError, XlaInspectError


@pytest.mark.parametrize(
    ("name", "module_id", "module_name", "platform", "tag", "stage", "kind"),
    [
        ("module_0000.jit_f.before_optimizations.txt", 0, "jit_f", None, None, "before_optimizations", "hlo"),
        ("module_0002.jit_g.cpu_after_optimizations.txt", 2, "jit_g", "cpu", "cpu", "after_optimizations", "hlo"),
        (
            "module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt",
            1,
            "jit_f",
            "gpu",
            "sm_9.0a",
            "after_optimizations",
            "hlo",
        ),
        (
            "module_0001.jit_f.sm_9.0_gpu_after_optimizations.txt",
            1,
            "jit_f",
            "gpu",
            "sm_9.0",
            "after_optimizations",
            "hlo",
        ),
        (
            "module_0003.jit_f.gfx90a_gpu_after_optimizations.txt",
            3,
            "jit_f",
            "rocm",
            "gfx90a",
            "after_optimizations",
            "hlo",
        ),
        ("module_12345.after_optimizations.txt", 12345, None, None, None, "after_optimizations", "hlo"),
        (
            "module_0029.jit_layouts.cl_933746096.after_optimizations_before_buffer_assignment.txt",
            29,
            "jit_layouts",
            "tpu",
            None,
            "after_optimizations_before_buffer_assignment",
            "hlo",
        ),
        (
            "module_0029.jit_layouts.cl_933746096.after_codegen.txt",
            29,
            "jit_layouts",
            "tpu",
            None,
            "after_codegen",
            "hlo",
        ),
        (
            "module_0002.jit_g.cpu_after_optimizations-memory-usage-report.txt",
            2,
            "jit_g",
            "cpu",
            "cpu",
            "after_optimizations",
            "memory-usage-report",
        ),
        (
            "module_0002.jit_g.cpu_after_optimizations-buffer-assignment-values.txt",
            2,
            "jit_g",
            "cpu",
            "cpu",
            "after_optimizations",
            "buffer-assignment-values",
        ),
        (
            "module_0002.jit_g.cpu_after_optimizations-live-range.txt",
            2,
            "jit_g",
            "cpu",
            "cpu",
            "after_optimizations",
            "live-range",
        ),
        ("module_0002.jit_g.after_optimizations.hlo.pb.gz", 2, "jit_g", None, None, "after_optimizations", "proto"),
        ("module_0002.jit_g.after_optimizations.dot", 2, "jit_g", None, None, "after_optimizations", "dot"),
        ("module_0002.jit_g.debug_options", 2, "jit_g", None, None, None, "debug_options"),
        (
            "module_0000.jit_layouts.cl_933746096.execution_options.txt",
            0,
            "jit_layouts",
            "tpu",
            None,
            None,
            "execution_options",
        ),
        ("module_0000.jit_f.jit_f.ir-no-opt.ll", 0, "jit_f", None, None, None, "llvm-ir"),
        ("module_0000.jit_f.obj-file.jit_f.o", 0, "jit_f", None, None, None, "object"),
        (
            "module_0004.jit_top.0004.fusion.after_pipeline-start.before_priority-fusion.txt",
            4,
            "jit_top",
            None,
            None,
            "pass",
            "hlo",
        ),
        # jax 0.11.2's GPU files (fixtures/jax011/dumps/gpu_matmul_fusions, ../shared/gpu-corpus)
        (
            "module_146159.jit_mlp.after_spmd_partitioner.txt",
            146159,
            "jit_mlp",
            None,
            None,
            "after_spmd_partitioner",
            "hlo",
        ),
        (
            "module_0000.jit_mlp.before_config_assignment.txt",
            0,
            "jit_mlp",
            None,
            None,
            "before_config_assignment",
            "hlo",
        ),
        ("module_0000.jit_mlp.thunk_sequence.txt", 0, "jit_mlp", None, None, None, "thunk-sequence"),
        ("module_0000.jit_mlp.thunk_sequence_after_thunk_passes.txt", 0, "jit_mlp", None, None, None, "thunk-sequence"),
        ("module_0000.jit_mlp.thunk_metadata.txt", 0, "jit_mlp", None, None, None, "thunk-metadata"),
        ("module_0000.jit_mlp.autotune_results.pbtxt", 0, "jit_mlp", None, None, None, "autotune-results"),
        ("module_0000.jit_mlp.gpu_target_config.pbtxt", 0, "jit_mlp", None, None, None, "gpu-target-config"),
        ("module_0000.jit_mlp.config.pbtxt", 0, "jit_mlp", None, None, None, "config"),
        (
            "1795239450663901.module_0000.jit_train_step.before_optimizations.txt",
            0,
            "jit_train_step",
            None,
            None,
            "before_optimizations",
            "hlo",
        ),
    ],
)
def test_classify_file_names(name, module_id, module_name, platform, tag, stage, kind):
    dump_file = classify(Path(name))
    assert (
        dump_file.module_id,
        dump_file.module_name,
        dump_file.platform,
        dump_file.platform_tag,
        dump_file.stage,
        dump_file.kind,
    ) == (module_id, module_name, platform, tag, stage, kind)


def test_classify_pass_fields_and_timestamp():
    per_pass = classify(
        Path(
            "module_0000.jit_step.0004.HLO_passes_through_layout_assignment"
            ".after_flatten-call-graph.before_layout-assignment.txt"
        )
    )
    assert (per_pass.step, per_pass.pipeline, per_pass.after_pass, per_pass.before_pass) == (
        4,
        "HLO_passes_through_layout_assignment",
        "flatten-call-graph",
        "layout-assignment",
    )
    assert classify(Path("1795239450663901.module_0000.jit_f.debug_options")).timestamp == 1795239450663901
    assert classify(Path("README.md")) is None


def test_load_dump_every_scenario_matches_jax_compile_counts(jax_version):
    """The number of modules per function equals what jax reported (backend_compile_duration events)."""
    for record in sorted(jax_version.dumps.glob("*.compiles.json")):
        directory = jax_version.dumps / record.name.removesuffix(".compiles.json")
        if not directory.is_dir():
            continue
        scenario = json.loads(record.read_text())
        counts = {name: len(modules) for name, modules in load_dump(directory).functions().items()}
        if "--xla_dump_max_hlo_modules" in scenario["xla_flags"]:  # the cap leaves compiles out
            assert counts.keys() == scenario["backend_compiles"].keys(), directory.name
            assert all(counts[n] < scenario["backend_compiles"][n] for n in counts), directory.name
        else:
            assert counts == scenario["backend_compiles"], directory.name


def test_cpu_module_files_and_stages(jax_version):
    dump = load_dump(jax_version.dumps / "ragged_batch")
    first = dump.modules[0]
    assert (first.module_id, first.name, first.platform, first.platform_tag) == (0, "jit_train_step", "cpu", "cpu")
    assert first.stages == ["before_optimizations", "after_optimizations"]
    assert sorted(f.kind for f in first.files) == sorted(
        [
            "hlo",
            "hlo",
            "buffer-assignment",
            "buffer-assignment-values",
            "live-range",
            "memory-usage-report",
            "debug_options",
            "mlir",
            "other",
            "other",
        ]
    )
    assert first.file().path.name == "module_0000.jit_train_step.cpu_after_optimizations.txt"
    assert first.header().parameter_shapes[2].dims == (100, 8)
    assert first.module().instruction_count > 10


def test_jax011_gpu_stages_and_side_files():
    """An H200 under jax 0.11.2 dumps two more HLO stages (the partitioned input, and the optimized module before
    it is scheduled) and seven GPU side files, each of a kind; the executed module is the scheduled one."""
    (module,) = load_dump(JAX011 / "gpu_matmul_fusions").modules
    assert (module.platform, module.platform_tag) == ("gpu", "sm_9.0a")
    assert module.stages == [
        "before_optimizations",
        "after_spmd_partitioner",
        "before_config_assignment",
        "after_optimizations",
    ]
    assert module.file().path.name == "module_0000.jit_mlp.sm_9.0a_gpu_after_optimizations.txt"
    assert module.file("hlo", "before").path.name == "module_0000.jit_mlp.before_optimizations.txt"
    kinds = Counter(f.kind for f in module.files)
    assert kinds["hlo"] == 4 and "unknown" not in kinds and "folder" not in kinds
    for kind in ("thunk-sequence", "thunk-metadata", "autotune-results", "gpu-target-config", "config"):
        assert kinds[kind] == 1, kind


def test_module_ids_past_four_digits_work_in_every_command(tmp_path):
    """GPU modules are numbered by a process-wide counter under jax 0.11 (`module_146159`, ../shared/gpu-corpus): the
    GPU fixture with its files renamed to that id answers every command as under id 0."""
    dump = tmp_path / "dump"
    dump.mkdir()
    for path in (JAX011 / "gpu_matmul_fusions").rglob("*"):
        if path.is_file():
            target = dump / path.relative_to(JAX011 / "gpu_matmul_fusions").as_posix().replace(
                "module_0000", "module_146159"
            )
            target.parent.mkdir(exist_ok=True)
            shutil.copy(path, target)
    (module,) = load_dump(dump).modules
    assert (module.module_id, module.name, len(module.stages)) == (146159, "jit_mlp", 4)
    runner = CliRunner()
    modules = json.loads(runner.invoke(app, ["modules", str(dump), "--format", "json"]).stdout)
    assert [(r["module_id"], r["function"]) for r in modules] == [(146159, "jit_mlp")]
    for command in (["doctor"], ["count-recompiles"], ["ops"], ["fusions"], ["memory"], ["diff", str(dump)]):
        result = runner.invoke(app, [command[0], str(dump), *command[1:], "--format", "json"])
        assert result.exit_code == 0, (command, result.stderr)
    doctor = json.loads(runner.invoke(app, ["doctor", str(dump), "--format", "json"]).stdout)
    assert doctor["findings"] == []


def test_tpu_stages_and_ids():
    dump = load_dump(DUMPS / "tpu_v5e")
    first = dump.modules[0]
    assert first.platform == "tpu"
    assert first.stages == [
        "before_optimizations",
        "after_optimizations_before_buffer_assignment",
        "after_optimizations_after_buffer_assignment",
        "after_optimizations",
        "after_codegen",
    ]
    assert [m.module_id for m in dump.functions()["jit_layouts"]][:3] == [0, 29, 58]


def test_timestamped_side_files_join_their_module():
    dump = load_dump(DUMPS / "timestamped")
    assert len(dump.modules) == 2
    for module in dump.modules:
        assert module.timestamp is not None
        assert module.file("debug_options", stage=None) is not None


def test_per_pass_dump_orders_stages():
    module = load_dump(DUMPS / "per_pass_all").modules[0]
    assert module.stages == ["before_optimizations", "pass", "in_pass", "after_optimizations"]


def test_per_host_subdirectories(tmp_path):
    for host in ("host0", "host1"):
        shutil.copytree(DUMPS / "clean_run", tmp_path / host)
    dump = load_dump(tmp_path)
    assert sorted(m.host for m in dump.modules) == ["host0", "host1"]
    assert len(dump.functions()["jit_train_step"]) == 2


def test_damaged_files_are_skipped(tmp_path):
    shutil.copytree(DUMPS / "ragged_batch", tmp_path / "d")
    after = tmp_path / "d" / "module_0002.jit_train_step.cpu_after_optimizations.txt"
    text = after.read_text()
    after.write_text(text[: len(text) // 2])
    (tmp_path / "d" / "module_0004.jit_eval_step.cpu_after_optimizations.txt").write_bytes(b"\x00\x01binary")
    gz = tmp_path / "d" / "module_0006.jit_eval_step.cpu_after_optimizations.txt"
    gz.with_name(gz.name + ".gz").write_bytes(gzip.compress(gz.read_bytes()))
    gz.unlink()
    dump = load_dump(tmp_path / "d")
    parsed, skipped = select_modules(dump)
    assert len(parsed) == 2  # module 0000 and the gzip-compressed 0006
    assert dump.skipped == []  # the dump is not changed
    assert sorted(s.path.name for s in skipped) == [
        "module_0002.jit_train_step.cpu_after_optimizations.txt",
        "module_0004.jit_eval_step.cpu_after_optimizations.txt",
    ]
    assert any("binary" in s.reason for s in skipped)
    with pytest.raises(XlaInspectError, match="truncated"):
        select_modules(load_dump(tmp_path / "d"), strict=True)


def test_missing_and_empty_paths(tmp_path):
    with pytest.raises(DumpError, match="no such file"):
        load_dump(tmp_path / "nope")
    with pytest.raises(DumpError, match=r"no XLA dump files \(module_\*\.txt"):
        load_dump(tmp_path)


def test_single_loose_hlo_file_named_from_header(tmp_path):
    loose = tmp_path / "step.hlo"
    shutil.copy(DUMPS / "clean_run" / "module_0000.jit_train_step.cpu_after_optimizations.txt", loose)
    dump = load_dump(loose)
    assert [m.name for m in dump.modules] == ["jit_train_step"]


def test_header_line_is_the_first_line_of_every_fixture_and_corpus_model(tmp_path):
    """Headers of 65 KB (llama's entry_computation_layout) and gzip files read like short ones."""
    paths = hlo_fixture_files((DUMPS, JAX011)) + corpus_files("models/*")
    compressed = tmp_path / "module_0000.jit_f.cpu_after_optimizations.txt.gz"
    compressed.write_bytes(gzip.compress(paths[0].read_bytes()))
    for path in [*paths, compressed]:
        assert header_line(path) == read_text(path).split("\n", 1)[0], path
    assert max(len(header_line(p)) for p in paths) > (65_000 if corpus_files("models/*") else 2_000)


def test_modules_command_lists_the_jax011_gpu_stages():
    from typer.testing import CliRunner

    from xlainspect.cli.app import app

    result = CliRunner().invoke(app, ["modules", str(JAX011 / "gpu_matmul_fusions"), "--format", "json"])
    (row,) = json.loads(result.stdout)
    assert result.exit_code == 0
    assert (row["platform"], row["stages"]) == (
        "sm_9.0a",
        "before_opt, after_spmd_partitioner, before_config_assignment, after_opt",
    )


def test_modules_command_lists_compiles_with_the_grammars_instruction_counts():
    from typer.testing import CliRunner

    from xlainspect.cli.app import app

    result = CliRunner().invoke(app, ["modules", str(DUMPS / "ragged_batch"), "--format", "json"])
    rows = json.loads(result.stdout)
    assert result.exit_code == 0
    assert [(r["module_id"], r["function"], r["instructions"]) for r in rows] == [
        (0, "jit_train_step", 94),
        (2, "jit_train_step", 74),
        (4, "jit_eval_step", 37),
        (6, "jit_eval_step", 27),
    ]
    dump = load_dump(DUMPS / "ragged_batch")
    assert [r["instructions"] for r in rows] == [m.module().instruction_count for m in dump.modules]


@pytest.mark.parametrize("size", [3, 100, 16_383, 16_384, 16_385, 40_000])
@pytest.mark.parametrize("gzipped", [False, True])
def test_first_line_and_tail_at_every_size(tmp_path, size, gzipped):
    """The first line and the last bytes, read without the middle, are those of the whole file: below,
    at and past the bytes one read takes, plain and gzip."""
    text = b"\n\nHloModule m, entry_computation_layout={()->f32[]}\n" + b"x" * size + b"\n}\n"
    path = tmp_path / "module_0000.m.before_optimizations.txt"
    path.write_bytes(gzip.compress(text) if gzipped else text)
    first, tail = read_first_line_and_tail(path, TAIL_BYTES)
    assert first == b"HloModule m, entry_computation_layout={()->f32[]}\n"
    assert tail == text.lstrip()[-TAIL_BYTES:]
    assert read_bytes(path) == text


def test_module_id_follows_xla_file_name_rule():
    # dump.cc's FilenameFor: `module_%04d.` then the module name; test strings, not real files
    assert file_module_id("module_0029.jit_f.sm_9.0_gpu_after_optimizations.txt") == 29
    assert file_module_id("module_0042.jit_f") == 42
    assert file_module_id("module_146159.jit_mlp") == 146159  # past four digits, as %04d prints them
    assert file_module_id("jit_f") is None
    assert file_module_id("module_12.jit_f") is None  # XLA pads the id to four digits


def test_last_line_is_the_last_non_blank_one():
    assert last_line(b"  ROOT %t = f32[] add(%a, %b)\n}\n\n") == b"}"
    assert last_line(b"ENTRY %main {\n  ROOT %p = f32[] parameter(0)") == b"  ROOT %p = f32[] parameter(0)"
    assert last_line(b"\n \n") == b""


def _below(files, prefix: str) -> list[tuple]:
    return sorted(((f.location.removeprefix(prefix), *dataclasses.astuple(f)[1:]) for f in files), key=str)


def test_a_listing_classifies_every_file_as_the_folder_scan_does(tmp_path):
    """`scan_listed` (a bucket's listing, nothing fetched) finds what `scan_dump` finds in each fixture
    dump, and in one written with --xla_dump_hlo_to_subfolder: the same files, hosts, kinds and
    modules, per-module and process folders included."""
    folder = tmp_path / "subfolders" / "host_0" / "module_0000.jit_f"
    for name in ("module.mlir", "p_7/module_0000.jit_f.before_optimizations.txt", "p_7/more/module_0001.jit_g.txt"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("HloModule jit_f\n")
    for root in [tmp_path / "subfolders", *sorted(p for p in DUMPS.iterdir() if p.is_dir())]:
        names = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()]
        listed = _below(scan_listed("s3://b/d", names), "s3://b/d/")
        assert _below(scan_dump(root), f"{root}/") == listed, root.name
