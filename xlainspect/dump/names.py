"""Dump file names (`--xla_dump_to=DIR`) classified: what each file is, from its name alone.

XLA names every per-module file `[<ts>.]module_<id>[.<name>][.cl_<CL>].<suffix>` (reference §3.1).
Everything here works from file names, so listing a dump of thousands of modules costs one directory
scan and nothing is read.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Required, TypedDict, cast

MODULE_FILE = re.compile(
    r"^(?:(?P<ts>\d+)\.)?(?:(?P<prefix>[A-Za-z_][\w-]*)\.)?module_(?P<id>\d{4,})(?:\.(?P<rest>.+))?$"
)
_STAGE = (
    r"(?P<platform>cpu_|sm_\d+\.\d+[af]?_gpu_|gfx[0-9a-z]+_gpu_)?"
    r"(?P<stage>before_optimizations|after_optimizations_before_buffer_assignment"
    r"|after_optimizations_after_buffer_assignment|after_optimizations|after_codegen"
    r"|after_spmd_partitioner|before_config_assignment)"
)
_MAIN_EXTENSIONS = {
    ".txt": "hlo",
    ".txt.gz": "hlo",
    "-buffer-assignment.txt": "buffer-assignment",
    "-buffer-assignment-values.txt": "buffer-assignment-values",
    "-live-range.txt": "live-range",
    "-memory-usage-report.txt": "memory-usage-report",
    "-memory-usage-report.pb": "memory-usage-report",
    "-memory-usage-report.pb.gz": "memory-usage-report",
    ".hlo.pb": "proto",
    ".hlo.pb.gz": "proto",
    ".riegeli": "proto",
    ".dot": "dot",
    ".top_level.html": "html",
    ".html": "html",
    ".url": "other",
    ".thunk_sequence.txt": "other",
    ".fdo_profile": "other",
    ".config.pbtxt": "other",
}
_MAIN = re.compile(
    rf"^(?:(?P<name>.+)\.)?{_STAGE}"
    rf"(?P<ext>{'|'.join(re.escape(e) for e in sorted(_MAIN_EXTENSIONS, key=len, reverse=True))})$"
)
_PASS = re.compile(
    r"^(?:(?P<name>.*)\.)?(?P<step>\d{4,})\.(?P<pipeline>.+?)\.after_(?P<after>.+?)\.before_(?P<before>.+?)\.txt$"
)
_IN_PASS = re.compile(r"^(?:(?P<name>.*)\.)?(?P<step>\d{4,})\.(?P<pass_name>[^.]+)\.(?P<what>[^.]+)\.txt$")
_SIDE = re.compile(
    r"^(?:(?P<name>.+)\.)?(?P<side>debug_options|execution_options\.txt|basic_compiler_metadata\.txt"
    r"|target_arguments\.txt|transfer_stats\.txt|flagfile|hlo_module_config\.txt|tpu_comp_env\.txt"
    r"|metadata\.textproto|thunk_sequence(?:_after_thunk_passes)?\.txt|thunk_metadata\.txt"
    r"|autotune_results\.pbtxt|gpu_target_config\.pbtxt|config\.pbtxt)$"
)
_BY_EXTENSION = re.compile(
    r"^(?:(?P<name>.+?)\.)?(?P<what>.*?)(?P<ext>\.ll|\.o|\.ptx|\.mlir|\.hlo_snapshot\.pb|\.hlo_unoptimized_snapshot\.(?:pb|txt)"
    r"|\._fusion\.(?:html|pyz))$"
)
_EXTENSION_KINDS = {".ll": "llvm-ir", ".o": "object", ".ptx": "ptx", ".mlir": "mlir"}
_SIDE_KINDS = {
    "debug_options": "debug_options",
    "execution_options.txt": "execution_options",
    "thunk_sequence.txt": "thunk-sequence",
    "thunk_sequence_after_thunk_passes.txt": "thunk-sequence",
    "thunk_metadata.txt": "thunk-metadata",
    "autotune_results.pbtxt": "autotune-results",
    "gpu_target_config.pbtxt": "gpu-target-config",
    "config.pbtxt": "config",
}
"""Side files without a stage; the GPU ones are what jax 0.11.2's XLA writes beside every GPU module
(`../shared/gpu-corpus`): the kernels each op launches in execution order (`thunk_sequence`), their
profiler names (`thunk_metadata`), autotuning results, the device description the compile targeted,
and the module's full config (`xla_dump_full_hlo_config`)."""
_CL_TAG = re.compile(r"^(?P<name>.*?)\.?(?P<cl>cl_\d+)$")
_FOLDER_FILES = {"module.mlir": "mlir"}

AFTER_STAGES = (
    "after_optimizations",
    "after_optimizations_after_buffer_assignment",
    "after_optimizations_before_buffer_assignment",
    "after_codegen",
)
"""After-optimizations HLO, best first: the module XLA executes is the plain `after_optimizations` one.
Not among them: XLA:GPU's `before_config_assignment` (jax 0.11.2), the optimized module before it is
scheduled (no `is_scheduled`), which a GPU dump writes beside the scheduled one."""
AFTER_RANK: dict[str | None, int] = {stage: rank for rank, stage in enumerate(AFTER_STAGES)}
STAGE_ORDER = (
    "before_optimizations",
    "after_spmd_partitioner",
    "pass",
    "in_pass",
    "before_config_assignment",
    "after_optimizations_before_buffer_assignment",
    "after_optimizations_after_buffer_assignment",
    "after_optimizations",
    "after_codegen",
)
_TPU_ONLY = frozenset(
    {"after_codegen", "after_optimizations_before_buffer_assignment", "after_optimizations_after_buffer_assignment"}
)


@dataclass(slots=True)
class DumpFile:
    """One file of a dump, as its name describes it (nothing is read).

    Not frozen and holding the path as text: a dump of 20,000 compiles lists 140,000 files, and a
    frozen dataclass or a Path object per file would be most of the cost of listing them."""

    location: str
    """The file's path as found (relative to the working directory when the dump path was)."""
    module_id: int | None
    module_name: str | None
    """From the file name; None when XLA dropped it (the name would exceed 255 chars)."""
    platform: str | None
    """"cpu", "gpu" (CUDA), "rocm", "tpu", or None (before_optimizations, or plain `after_optimizations`)."""
    stage: str | None
    """"before_optimizations", one of AFTER_STAGES, "pass" (between passes) or "in_pass"; None for
    files that are no HLO stage (debug_options, module.mlir, ...)."""
    kind: str
    platform_tag: str | None = None
    """The raw prefix: "cpu", "sm_9.0a", "gfx90a"."""
    timestamp: int | None = None
    host: str = ""
    """The sub-directory (relative to the dump root) the file was found in; "" for the root."""
    cl: str | None = None
    """libtpu's `cl_<digits>` tag, stripped from the module name."""
    step: int | None = None
    pipeline: str | None = None
    after_pass: str | None = None
    before_pass: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.location)


def _platform(tag: str | None) -> tuple[str | None, str | None]:
    if not tag:
        return None, None
    tag = tag.rstrip("_").removesuffix("_gpu")
    if tag == "cpu":
        return "cpu", tag
    return ("rocm" if tag.startswith("gfx") else "gpu"), tag


def _split_name(name: str | None) -> tuple[str | None, str | None]:
    """(module name, cl tag): TPU dumps put `cl_<digits>` between the name and the suffix."""
    if not name:
        return None, None
    match = _CL_TAG.match(name)
    if match:
        return match["name"] or None, match["cl"]
    return name, None


def classify(path: str | os.PathLike[str], host: str = "") -> DumpFile | None:
    """What a dump file is, from its name alone; None for files XLA's dumper does not write."""
    location = os.fspath(path)
    match = MODULE_FILE.match(os.path.basename(location))
    return None if match is None else classified(match, location, host)


def file_module_id(name: str) -> int | None:
    """The module id a dump file's name (or a label `module_0029.jit_f`) starts with, by XLA's file-name
    rule (`MODULE_FILE`, the `module_%04d` of dump.cc's FilenameFor): 29; None for any other name."""
    match = MODULE_FILE.match(name)
    return int(match["id"]) if match else None


def in_folder(location: str, host: str, folder: DumpFile) -> DumpFile:
    """A file such as `module.mlir` in a classified per-module folder (`module_0000.jit_f/`): one of
    that folder's module."""
    return DumpFile(
        location,
        folder.module_id,
        folder.module_name,
        folder.platform,
        None,
        _FOLDER_FILES.get(os.path.basename(location), "other"),
        timestamp=folder.timestamp,
        host=host,
        cl=folder.cl,
    )


def classified(match: re.Match[str], location: str, host: str) -> DumpFile:
    """The DumpFile of a name that matched MODULE_FILE, built from positional fields (a fleet's dump
    is 900,000 files: keyword arguments would cost a third more)."""
    stamp, module_id, rest = cast("tuple[str | None, str, str | None]", match.group("ts", "id", "rest"))
    name, platform, stage, kind, tag, cl, step, pipeline, after, before = _suffix_fields(rest or "")
    timestamp = int(stamp) if stamp else None
    return DumpFile(
        location, int(module_id), name, platform, stage, kind, tag, timestamp, host, cl, step, pipeline, after, before
    )


@functools.lru_cache(maxsize=65536)
def _suffix_fields(
    rest: str,
) -> tuple[
    str | None, str | None, str | None, str, str | None, str | None, int | None, str | None, str | None, str | None
]:
    """`_describe_suffix` as DumpFile's fields in their order, from module_name to before_pass."""
    fields = _describe_suffix(rest)
    return (
        fields["module_name"],
        fields["platform"],
        fields["stage"],
        fields["kind"],
        fields.get("platform_tag"),
        fields.get("cl"),
        fields.get("step"),
        fields.get("pipeline"),
        fields.get("after_pass"),
        fields.get("before_pass"),
    )


class _Suffix(TypedDict, total=False):
    """What a file name says after `module_<id>.`: DumpFile's fields of that name."""

    module_name: Required[str | None]
    platform: Required[str | None]
    stage: Required[str | None]
    kind: Required[str]
    platform_tag: str | None
    cl: str | None
    step: int
    pipeline: str
    after_pass: str
    before_pass: str


def _describe_suffix(rest: str) -> _Suffix:
    """The fields a file name gives after `module_<id>.` (memoised by `_suffix_fields`: every compile of
    a function repeats the same suffixes, `jit_f.cpu_after_optimizations.txt`, under a new id)."""
    if main := _MAIN.match(rest):
        name, cl = _split_name(main["name"])
        platform, tag = _platform(main["platform"])
        if platform is None and (cl or main["stage"] in _TPU_ONLY):
            platform = "tpu"
        return {
            "module_name": name,
            "platform": platform,
            "stage": main["stage"],
            "kind": _MAIN_EXTENSIONS[main["ext"]],
            "platform_tag": tag,
            "cl": cl,
        }
    if step := _PASS.match(rest):
        name, cl = _split_name(step["name"])
        return {
            "module_name": name,
            "platform": None,
            "stage": "pass",
            "kind": "hlo",
            "cl": cl,
            "step": int(step["step"]),
            "pipeline": step["pipeline"],
            "after_pass": step["after"],
            "before_pass": step["before"],
        }
    if side := _SIDE.match(rest):
        name, cl = _split_name(side["name"])
        return {
            "module_name": name,
            "platform": "tpu" if cl else None,
            "stage": None,
            "kind": _SIDE_KINDS.get(side["side"], "other"),
            "cl": cl,
        }
    if by_extension := _BY_EXTENSION.match(rest):
        name, cl = _split_name(by_extension["name"])
        return {
            "module_name": name,
            "platform": None,
            "stage": None,
            "kind": _EXTENSION_KINDS.get(by_extension["ext"], "other"),
            "cl": cl,
        }
    if in_pass := _IN_PASS.match(rest):
        name, cl = _split_name(in_pass["name"])
        return {
            "module_name": name,
            "platform": None,
            "stage": "in_pass",
            "kind": "hlo",
            "cl": cl,
            "step": int(in_pass["step"]),
            "pipeline": in_pass["pass_name"],
            "after_pass": in_pass["what"],
        }
    name, cl = _split_name(rest)
    return {"module_name": name, "platform": "tpu" if cl else None, "stage": None, "kind": "folder", "cl": cl}
