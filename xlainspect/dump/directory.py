"""Dump directories (`--xla_dump_to=DIR`): file names classified, files grouped into one compile each.

XLA names every per-module file `[<ts>.]module_<id>[.<name>][.cl_<CL>].<suffix>` (reference §3.1).
Everything here works from file names and first lines, so listing a dump of thousands of modules
costs one directory scan; HLO bodies are parsed only when someone asks for them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from xlainspect.dump.files import decode_text, edges, read_bytes, read_edges, read_first_line_and_tail
from xlainspect.dump.model_cache import parse_file
from xlainspect.dump.storage import local
from xlainspect.errors import DumpError, HloParseError, NoMatchError, XlaInspectError, literal, no_match
from xlainspect.hlo.model import Module
from xlainspect.hlo.parser import parse_header, parse_hlo, split_computations
from xlainspect.settings import kept_objects
from xlainspect.workers import OWNED

_MODULE_FILE = re.compile(
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
_AFTER_RANK = {stage: rank for rank, stage in enumerate(AFTER_STAGES)}
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


def classify(path: str | os.PathLike[str], host: str = "", folder: DumpFile | None = None) -> DumpFile | None:
    """What a dump file is, from its name alone; None for files XLA's dumper does not write.

    `folder` is the classified per-module folder (`module_0000.jit_f/`) a file such as
    `module.mlir` sits in; such files belong to that folder's module.
    """
    location = os.fspath(path)
    name = os.path.basename(location)
    if folder is not None:
        return DumpFile(
            location,
            folder.module_id,
            folder.module_name,
            folder.platform,
            None,
            _FOLDER_FILES.get(name, "other"),
            timestamp=folder.timestamp,
            host=host,
            cl=folder.cl,
        )
    match = _MODULE_FILE.match(name)
    return None if match is None else _classified(match, location, host)


def _classified(match: re.Match, location: str, host: str) -> DumpFile:
    """The DumpFile of a name that matched _MODULE_FILE, built from positional fields (a fleet's dump
    is 900,000 files: keyword arguments would cost a third more)."""
    timestamp, module_id, rest = match.group("ts", "id", "rest")
    name, platform, stage, kind, tag, cl, step, pipeline, after, before = _suffix_fields(rest or "")
    timestamp = int(timestamp) if timestamp else None
    return DumpFile(
        location, int(module_id), name, platform, stage, kind, tag, timestamp, host, cl, step, pipeline, after, before
    )


@functools.lru_cache(maxsize=65536)
def _suffix_fields(rest: str) -> tuple:
    """`_describe_suffix` as DumpFile's fields in their order, from module_name to before_pass."""
    fields = _describe_suffix(rest)
    return (
        *(fields[k] for k in ("module_name", "platform", "stage", "kind")),
        *(fields.get(k) for k in ("platform_tag", "cl", "step", "pipeline", "after_pass", "before_pass")),
    )


def _describe_suffix(rest: str) -> dict:
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


@dataclass(slots=True)
class SkippedFile:
    """A file a command left out, and why (never counted as zero)."""

    path: Path
    reason: str

    @classmethod
    def of(cls, path: Path, error: XlaInspectError) -> SkippedFile:
        """The file and the error's message (a parse error with its source line and caret)."""
        return cls(path, error.render() if isinstance(error, HloParseError) else str(error))

    def add_to(self, skipped: list[SkippedFile]) -> None:
        """Append it to `skipped` unless its file is there: several routes of one analysis may meet one bad
        file (the first reason is kept)."""
        if all(s.path != self.path for s in skipped):
            skipped.append(self)


@dataclass(eq=False)
class DumpModule:
    """One compile: the files sharing host, timestamp, module id and name."""

    module_id: int | None
    name: str | None
    platform: str | None
    host: str
    files: list[DumpFile] = field(default_factory=list)
    timestamp: int | None = None
    _parsed: dict[str, Module] = field(default_factory=dict, repr=False)
    _read: dict[str, bytes] = field(default_factory=dict, repr=False)
    """The contents of its files read so far, by location: a command that needs a file's header, text
    and bytes along several routes (count-recompiles' detectors) reads it once."""

    def __getstate__(self) -> dict[str, object]:
        """Pickled without its parsed models and file contents: an answer that holds a dump (`report_of`'s)
        stays small in the command cache, and a model is parsed again, from the model cache, where one is
        needed."""
        return {**self.__dict__, "_parsed": {}, "_read": {}}

    @property
    def stages(self) -> list[str]:
        """HLO stages present, in compile order (before, passes by step, after)."""
        return sorted({f.stage for f in self.files if f.kind == "hlo" and f.stage}, key=STAGE_ORDER.index)

    @property
    def platform_tag(self) -> str | None:
        return next((f.platform_tag for f in self.files if f.platform_tag), None)

    def file(self, kind: str = "hlo", stage: str | None = "after") -> DumpFile | None:
        """The file of `kind` at `stage`; "after" is the best after-optimizations one, "before" the input,
        None a file of no stage (debug_options).

        Side files (buffer assignment, memory report) are written for after-optimizations HLO only.
        """
        if stage == "before":
            stage = "before_optimizations"
        if stage != "after":
            return next((f for f in self.files if f.kind == kind and f.stage == stage), None)
        best, best_rank = None, len(AFTER_STAGES)
        for candidate in self.files:  # one pass, no list: a fleet's doctor asks 500,000 times
            if candidate.kind == kind and _AFTER_RANK.get(candidate.stage, best_rank) < best_rank:
                best, best_rank = candidate, _AFTER_RANK[candidate.stage]
        if best is not None:
            return best
        passes = sorted((f for f in self.files if f.kind == kind and f.stage == "pass"), key=lambda f: f.step or 0)
        return passes[-1] if passes else None

    def hlo_file(self, stage: str = "after") -> DumpFile | None:
        """The HLO text at `stage`, falling back to before_optimizations (dumps made with a module filter)."""
        return self.file("hlo", stage) or self.file("hlo", "before")

    def hlo_path(self, stage: str = "after") -> Path:
        """The path of `hlo_file(stage)`: every module of a loaded dump has one; a module made without
        HLO text (by hand) is a DumpError naming it."""
        found = self.hlo_file(stage)
        if found is None:
            raise DumpError(f"{self.label}: no HLO text in the dump")
        return found.path

    def hlo_bytes(self) -> int:
        """Bytes of its HLO text (0 where it has none or it cannot be read): what analysing it costs
        grows with, so work shared among processes goes out largest first."""
        with contextlib.suppress(OSError, AttributeError):
            return os.stat(self.hlo_file().location).st_size
        return 0

    def read(self, dump_file: DumpFile, *, keep: bool = True) -> bytes:
        """The bytes of one of its files (decompressed), read once: kept for the next route that asks
        (`scoped_reads` drops them at the end of its block), unless `keep` is False (a caller that reads
        each file once and many of them); DumpError when the file is missing or unreadable."""
        data = self._read.get(dump_file.location)
        if data is None:
            data = read_bytes(dump_file.location)
            if keep:
                self._read[dump_file.location] = data
        return data

    def text(self, dump_file: DumpFile) -> str:
        """The text of one of its HLO files, read once; DumpError when unreadable, binary or not UTF-8."""
        return decode_text(self.read(dump_file), dump_file.location)

    def program_file(self) -> DumpFile | None:
        """The HLO jax gave XLA (before_optimizations, when dumped), else the compiled module's."""
        return self.file("hlo", "before") or self.hlo_file()

    def module(self, stage: str = "after") -> Module:
        """The parsed HLO module (cached); raises HloParseError or DumpError for a bad file."""
        if stage not in self._parsed:
            dump_file = self.hlo_file(stage)
            if dump_file is None:
                raise DumpError(f"module {self.label}: no HLO text file at stage {stage!r}")
            known = self.text(dump_file) if dump_file.location in self._read else None
            modules = parse_file(dump_file.path, text=known)
            if not modules or not modules[0].computations:
                raise DumpError(f"{dump_file.path}: no computations (empty or truncated HLO file)")
            self._parsed[stage] = modules[0]
        return self._parsed[stage]

    def signature(self, stage: str = "after") -> Module:
        """The header line and the ENTRY computation, parsed alone (cached): a signature and the entry
        parameters for a fraction of a big module's parse (its other computations are most of it). The
        whole module where this process parsed it already, or where that piece does not parse alone."""
        key = f"signature:{stage}"
        if stage in self._parsed or key in self._parsed:
            return self._parsed.get(stage) or self._parsed[key]
        dump_file = self.hlo_file(stage)
        text = self.text(dump_file) if dump_file is not None else ""
        header = text[: text.find("\n") + 1] if text.startswith("HloModule") else ""
        entry = next((p for p in split_computations(text) if p.startswith("ENTRY ") or "\nENTRY " in p), None)
        found = None
        if entry is not None and header:
            with contextlib.suppress(XlaInspectError):
                found = parse_hlo(entry if entry.startswith("HloModule") else header + entry, runner=OWNED)[0]
        self._parsed[key] = found if found is not None and found.entry.is_entry else self.module(stage)
        return self._parsed[key]

    def header(self, stage: str = "after") -> Module:
        """The `HloModule` line alone, parsed (a Module without computations): name and signature.

        Reads the first line and the last few bytes only, so a truncated file (a killed job, a
        compile still being written) is caught without reading the body. A header without
        `entry_computation_layout` (older XLA, or a damaged or foreign file) cannot give the
        signature alone: the whole module is parsed instead, and one without computations is a
        DumpError naming the file. Cached per stage.
        """
        key = f"header:{stage}"
        if key not in self._parsed:
            dump_file = self.hlo_file(stage)
            if dump_file is None:
                raise DumpError(f"module {self.label}: no HLO text file")
            header = parse_header(self._header_line(dump_file), dump_file.location)
            self._parsed[key] = header if header.entry_computation_layout else self.module(stage)
        return self._parsed[key]

    def _header_line(self, dump_file: DumpFile) -> str:
        """`header_line` of one of its files, from its content where that was read already; a small
        file's content, read whole by the way, is kept."""
        data = self._read.get(dump_file.location)
        if data is not None:
            return checked_header_line(dump_file.location, *edges(data, TAIL_BYTES))
        first, tail, whole = read_edges(dump_file.location, TAIL_BYTES)
        if whole is not None:
            self._read[dump_file.location] = whole
        return checked_header_line(dump_file.location, first, tail)

    @property
    def label(self) -> str:
        """`host/module_0004.jit_f` as a person would look for it in the directory."""
        where = f"{self.host}/" if self.host else ""
        number = "????" if self.module_id is None else f"{self.module_id:04d}"
        return f"{where}module_{number}" + (f".{self.name}" if self.name else "")


@contextlib.contextmanager
def scoped_reads(modules: Iterable[DumpModule]) -> Iterator[None]:
    """The file contents and models `modules` read or parse inside the block are dropped at its end, what
    they held before it stays: an analysis that visits every module of a big dump leaves the dump as it
    was given (nothing of the caller's evicted), its memory bounded by one block's reads. A module already
    in an enclosing block keeps its reads to that block's end (a command that runs two analyses over the
    same files reads them once)."""
    held = [(module, set(module._read), set(module._parsed)) for module in modules if module not in _SCOPED]
    _SCOPED.update(module for module, _, _ in held)
    try:
        yield
    finally:
        for module, read, parsed in held:
            _SCOPED.discard(module)
            for location in [k for k in module._read if k not in read]:
                del module._read[location]
            for key in [k for k in module._parsed if k not in parsed]:
                del module._parsed[key]


_SCOPED: set[DumpModule] = set()
"""The modules inside a `scoped_reads` block (a DumpModule hashes by identity)."""


SHARE_MIN_MODULES = 64
"""Modules from which analysing a dump's modules is shared with forked workers (where xlainspect owns
the process), whatever their size: below it, and below `SHARE_MIN_BYTES`, a fork costs more than the
half of the work it takes."""
SHARE_MIN_BYTES = 256 << 10
"""HLO bytes from which analysing a dump's modules is shared with forked workers however few they are:
a 350 KB module's analyses take about 0.15 s, a fork 3 ms."""

TAIL_BYTES = 512
"""Bytes read from the end of an HLO file: enough to see whether its last line closes a computation."""


def header_line(path: Path | str) -> str:
    """The first line of an HLO text file (the `HloModule` header), read with the file's last bytes
    only: a file whose last line does not close a computation (a killed job, a compile still being
    written) is a DumpError, caught without reading the body."""
    return checked_header_line(path, *read_first_line_and_tail(path, TAIL_BYTES))


def checked_header_line(path: Path | str, first: bytes, tail: bytes) -> str:
    """`header_line` of a file's first line and last bytes, read already. A first line that is no
    `HloModule` header is returned unchecked: the file is not HLO text (not a truncated one), and
    parsing the line says so with its place (`path:1:col`)."""
    if not first.strip():
        raise DumpError(f"{path}: empty file")
    line = decode_text(first, path).rstrip("\r\n")
    if not line.lstrip().startswith("HloModule"):
        return line
    *_, before_last, last = [b"", *tail.rstrip().rsplit(b"\n", 2)]
    if before_last.lstrip().startswith(b"HloModule"):
        raise DumpError(f"{path}: no computation after the HloModule line (a damaged or foreign file)")
    last = last.strip()
    if not last.startswith(b"}"):
        shown = last.decode("utf-8", errors="replace")[:80]
        raise DumpError(
            f"{path}: truncated: the file ends inside a computation (last line {shown!r}); "
            "the compile was killed or is still being written"
        )
    return line


@dataclass
class Dump:
    """The modules of a dump folder (or HLO files), and the files skipped while reading them."""

    root: Path
    modules: list[DumpModule]
    skipped: list[SkippedFile] = field(default_factory=list)
    runs: bool = False
    """Several dumps given at once (`load_dump([a, b])`, each a `host`): runs to compare, not the
    hosts of one job."""

    def functions(self) -> dict[str, list[DumpModule]]:
        """Modules per function (HloModule name), each list in compile order (host, timestamp, id)."""
        grouped: dict[str, list[DumpModule]] = {}
        for module in self.modules:
            grouped.setdefault(module.name or module.label, []).append(module)
        return grouped

    def skip(self, path: Path, error: XlaInspectError, strict: bool = False) -> None:
        """Record a file that cannot be analysed (or raise, in strict mode) and go on with the rest."""
        if strict:
            raise error
        self.skipped.append(SkippedFile.of(path, error))


def load_dump(path: str | Path | list[Path], *, strict: bool = False) -> Dump:
    """A dump directory (per-host sub-directories included), one HLO file, or a list of files; each a
    path or an fsspec URL (read through its local mirror, `storage.local`)."""
    with kept_objects():  # a fleet's file records and modules live to the end of the run
        return _load_dump([local(p) for p in path] if isinstance(path, (list, tuple)) else [local(path)], strict)


def load_module_of(path: Path) -> Dump:
    """The dump of the module one dump file belongs to: the file and the files XLA named for the same
    compile (module id and timestamp) beside it. Its folder is listed, never walked nor any other entry
    opened: a file argument reads that file's module whatever else its folder holds (`/tmp`'s link
    loops, unreadable folders). A file not named like a dump file is read alone."""
    found = classify(path)
    if found is None or found.module_id is None:
        return load_dump(path)
    try:
        names = os.listdir(path.parent)
    except OSError:  # a folder that lets its files be read but not listed
        names = [path.name]
    siblings = (classify(path.parent / name) for name in names)
    key = (found.module_id, found.timestamp)
    return dump_of(path.parent, [f for f in siblings if f is not None and (f.module_id, f.timestamp) == key])


def _load_dump(paths: list[Path], strict: bool) -> Dump:
    files: list[DumpFile] = []
    loose: list[Path] = []
    directories = [p for p in paths if p.is_dir()]
    scan_root = Path(os.path.commonpath([d.absolute() for d in directories])) if len(directories) > 1 else None
    for one in paths:
        if one.is_dir():  # several directories: each one's path (from their common parent) is its host
            files += _scan(scan_root or one, one.absolute() if scan_root else one, set())
        elif one.exists():
            dump_file = classify(one)
            if dump_file is None or dump_file.kind != "hlo":
                loose.append(one)
            else:
                files.append(dump_file)
        else:
            raise DumpError(f"{one}: no such file or directory")
    dump = _dump(paths, files, loose, strict)
    dump.runs = scan_root is not None
    return dump


def dump_of(root: Path, files: list[DumpFile]) -> Dump:
    """The Dump of files `scan_dump(root)` found: a caller that needs every file too scans once."""
    with kept_objects():
        return _dump([root], files, [], strict=False)


def _dump(paths: list[Path], files: list[DumpFile], loose: list[Path], strict: bool) -> Dump:
    modules = _group(files) + [
        DumpModule(None, None, None, "", [DumpFile(str(p), None, None, None, "after_optimizations", "hlo")])
        for p in loose
    ]
    kept = [m for m in modules if m.hlo_file()]
    if not kept:
        where = paths[0] if len(paths) == 1 else ", ".join(map(str, paths))
        raise DumpError(
            f"no XLA dump files (module_*.txt: *before_optimizations.txt, *after_optimizations.txt) under {where}"
        )
    root = (
        paths[0] if len(paths) == 1 and paths[0].is_dir() else Path(os.path.commonpath([p.absolute() for p in paths]))
    )
    if loose:
        _name_modules_from_headers(modules, strict)
    return Dump(root=root, modules=kept)


def _name_modules_from_headers(modules: list[DumpModule], strict: bool) -> None:
    """Loose HLO files (not named like a dump file) take the module name from their header."""
    for module in modules:
        if module.name is None:
            try:
                module.name = module.header().name
            except XlaInspectError:  # left unnamed: the analysis that reads it meets the error and skips it
                if strict:
                    raise


def scan_dump(root: Path) -> list[DumpFile]:
    """Every file under a dump folder that XLA's dumper names, classified by name, per-module folders'
    files included (one os.scandir per folder: a 64-host dump lists about 900,000 files)."""
    with kept_objects():
        return _scan(root, root, set())


def _scan(root: Path, directory: Path, seen: set[tuple[int, int]], host: str | None = None) -> list[DumpFile]:
    """Classify every file under `directory` in one pass per folder (os.scandir, no stat per file);
    its host is `host`, else its path relative to `root`."""
    try:
        info = directory.stat()
    except OSError as error:
        raise DumpError(f"{directory}: cannot read ({error.strerror})") from None
    if (info.st_dev, info.st_ino) in seen:
        raise DumpError(f"{directory}: symbolic link loop")
    seen.add((info.st_dev, info.st_ino))
    if host is None:
        host = "" if directory == root else directory.relative_to(root).as_posix()
    files: list[DumpFile] = []
    try:
        entries = list(os.scandir(directory))
    except PermissionError:
        raise DumpError(f"{directory}: permission denied") from None
    except OSError as error:
        raise DumpError(f"{directory}: cannot read ({error.strerror})") from None
    for entry in entries:
        match = _MODULE_FILE.match(entry.name)
        if entry.is_dir():  # a per-module folder, or a host's (or any other) sub-directory
            folder = _classified(match, entry.path, host) if match else None
            if folder is not None and folder.kind == "folder":
                files += _folder_files(root, entry.path, host, folder, seen)
            else:
                files += _scan(root, Path(entry.path), seen)
        elif match:
            files.append(_module_file(match, entry.path, host))
    return files


def _module_file(match: re.Match, location: str, host: str) -> DumpFile:
    """A file (not a folder) named `module_*`: of kind `unknown` where no rule names its suffix."""
    found = _classified(match, location, host)
    if found.kind == "folder":
        found.kind = "unknown"
    return found


def _folder_files(
    root: Path, directory: str, host: str, folder: DumpFile, seen: set[tuple[int, int]]
) -> list[DumpFile]:
    """The per-module folder (`module_0000.jit_f/`: module.mlir, compile options). With
    --xla_dump_hlo_to_subfolder (2026) it holds one `<host>_<pid>/` folder per process instead: each
    is that process's host."""
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return []
    files = [classify(e.path, host, folder) for e in entries if e.is_file()]
    for entry in entries:
        if entry.is_dir():
            files += _scan(root, Path(entry.path), seen, f"{host}/{entry.name}" if host else entry.name)
    return files


def _group(files: list[DumpFile]) -> list[DumpModule]:
    """Files -> compiles. HLO stage files define the modules; side files (debug_options, the folder,
    LLVM IR whose kernel name follows the module name) join the module of their host and id whose
    name prefixes theirs. Timestamped dumps put no timestamp on debug_options and the folder."""
    by_key: dict[tuple, DumpModule] = {}
    for dump_file in files:
        if dump_file.stage is not None:
            key = (dump_file.host, dump_file.timestamp, dump_file.module_id, dump_file.module_name)
            module = by_key.get(key)
            if module is None:
                module = by_key[key] = DumpModule(
                    dump_file.module_id, dump_file.module_name, None, dump_file.host, timestamp=dump_file.timestamp
                )
            module.files.append(dump_file)
    by_id: dict[tuple, list[DumpModule]] = {}
    for module in by_key.values():
        by_id.setdefault((module.host, module.module_id), []).append(module)
    for dump_file in files:
        if dump_file.stage is None:
            owner = _owner(by_id.get((dump_file.host, dump_file.module_id), []), dump_file)
            if owner is not None:
                owner.files.append(dump_file)
    modules = sorted(by_key.values(), key=lambda m: (m.host, m.timestamp or 0, m.module_id or 0, m.name or ""))
    for module in modules:
        module.platform = _module_platform(module.files)
    return modules


def _owner(candidates: list[DumpModule], dump_file: DumpFile) -> DumpModule | None:
    name = dump_file.module_name or ""
    for module in candidates:
        if dump_file.timestamp in (None, module.timestamp) and (
            module.name == dump_file.module_name or name.startswith(f"{module.name}.")
        ):
            return module
    return None


def _module_platform(files: list[DumpFile]) -> str | None:
    platforms = {f.platform for f in files if f.platform}
    return next(iter(platforms)) if len(platforms) == 1 else (sorted(platforms)[0] if platforms else None)


def select_dump_modules(dump: Dump, *, function: str | None = None, module_re: str | None = None) -> list[DumpModule]:
    """The dump's modules of one function, or whose name or label matches a regex (nothing is parsed).

    A filter that matches nothing is a NoMatchError naming near matches, never an empty selection: an
    empty table and exit 0 would read as "nothing to see" when the name was only misspelt."""
    chosen = dump.modules
    if function is not None:
        chosen = [m for m in chosen if m.name == function]
        if not chosen:
            raise no_match("function", function, [m.name for m in dump.modules if m.name])
    if module_re is not None:
        pattern = _module_pattern(module_re)
        matched = [m for m in chosen if any(pattern.search(text) for text in _module_texts(m))]
        if not matched:
            where = f" of function {function}" if function else ""
            labels = ", ".join(_module_texts(m)[-1] for m in chosen[:3])
            raise NoMatchError(
                "$module_re " + literal(f"{module_re}: matches no module{where} (modules are labelled like {labels})")
            )
        chosen = matched
    return chosen


def _module_pattern(module_re: str) -> re.Pattern:
    try:
        return re.compile(module_re)
    except re.error as error:
        raise NoMatchError("$module_re " + literal(f"{module_re}: not a regular expression ({error})")) from None


def _module_texts(module: DumpModule) -> tuple[str, ...]:
    """What --module-re is matched against: the HloModule name, and the label as tables print it
    (`module_0172.jit_f`, with and without its host folder)."""
    label = module.label
    return (module.name or "", label, label.rpartition("/")[2])


def select_modules(
    dump: Dump, *, function: str | None = None, module_re: str | None = None, stage: str = "after", strict: bool = False
) -> tuple[list[Module], list[SkippedFile]]:
    """Parsed modules of the dump (optionally one function, or names matching a regex), and the files
    that do not parse, left out (raised with `strict`); the dump is not changed."""
    parsed: list[Module] = []
    skipped: list[SkippedFile] = []
    for dump_module in select_dump_modules(dump, function=function, module_re=module_re):
        try:
            parsed.append(dump_module.module(stage))
        except XlaInspectError as error:
            if strict:
                raise
            skipped.append(SkippedFile.of(dump_module.hlo_path(stage), error))
    return parsed, skipped
