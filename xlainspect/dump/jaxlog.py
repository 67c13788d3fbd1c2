"""jax's log of its compiles: seconds, persistent-cache outcome and cache-key component hashes.

The lines (jax 0.10.2, jax/_src/dispatch.py, compiler.py, compilation_cache.py, cache_key.py), in the
order one compile writes them:

* "Including XLA flag in cache key: --xla_..." (each flag twice: jax hashes every component once for the
  key and once more to log that component's own hash)
* "get_cache_key hash of serialized <component>: <hex>" for each of COMPONENTS
* "Persistent compilation cache hit for 'jit_f' with key 'jit_f-<hex>'" or
  "PERSISTENT COMPILATION CACHE MISS for 'jit_f' with key '...'"
* after a miss: "Writing jit_f to persistent compilation cache with key '...'" or a "Not writing
  persistent cache entry ..." line saying why
* "Finished XLA compilation of jit(f) in 0.014 sec" (a hit too: it times the cache read), after the
  time jax's log format puts before each message ("{levelname}:{asctime}:{name}:{lineno}: {message}",
  jax/_src/logging_config.py): when the compile ended

With `capture` also (jax/_src/interpreters/pxla.py, partial_eval.py):

* "Compiling jit(f) with global shapes and types (ShapedArray(float32[], weak_type=True), ...). Argument
  mapping: ..." before each compile (DEBUG of jax._src.interpreters.pxla): the argument types jax keys
  its caches on, the weak type included, of the arguments the program keeps (jit drops unused ones), in
  the order of the HLO's parameters
* "TRACING CACHE MISS at <call site>:" and its indented lines (WARNING of jax._src.interpreters.partial_eval
  with JAX_EXPLAIN_CACHE_MISSES=1): why jax traced a function again. jax explains misses of functions
  defined outside its own files only (`explain` returns early where `source_info_util.is_user_filename`
  is false), a built-in (no file) included

The cache lines are DEBUG records of those modules (JAX_DEBUG_LOG_MODULES, or JAX_LOGGING_LEVEL=DEBUG);
the "Finished" line is DEBUG, or WARNING with JAX_LOG_COMPILES=1. Lines are found by their message,
whatever the logging format around it. Stdlib only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Literal

from xlainspect.dump.files import read_bytes
from xlainspect.errors import DumpError

LOG_NAMES = ("jax.log", "jax.log.gz")
"""What `capture` saves in the dump directory (the .gz is read the same way)."""
COMPONENTS = (
    "computation",
    "jax_lib version",
    "backend version",
    "XLA flags",
    "compile_options",
    "accelerator_config",
    "compression",
    "custom_hook",
)
"""The cache key's components, in the order jax hashes them (cache_key.get, jax 0.10.2)."""
DEBUG_LOG_MODULES = (
    "jax._src.cache_key",
    "jax._src.compiler",
    "jax._src.compilation_cache",
    "jax._src.dispatch",
    "jax._src.interpreters.pxla",
)
"""The loggers that write the lines above: the narrowest JAX_DEBUG_LOG_MODULES that yields them."""
EXPLAIN_FLAG = "JAX_EXPLAIN_CACHE_MISSES"
"""jax_explain_cache_misses: jax says why each trace missed its cache."""
EXPLANATIONS = (b"TRACING CACHE MISS", b"PERSISTENT COMPILATION CACHE MISS", b"Not writing persistent cache entry")
"""The messages the flag raises from DEBUG to WARNING (partial_eval.explain, compiler.py, compilation_cache.py)."""

_FINISHED = re.compile(r"Finished XLA compilation of (?P<fun>.+?) in (?P<seconds>\d+(?:\.\d*)?(?:[eE][+-]?\d+)?) sec")
_COMPONENT = re.compile(r"get_cache_key hash of serialized (?P<component>.+?): (?P<hash>[0-9a-f]{64})")
_FLAG = re.compile(r"Including XLA flag in cache key: (?P<flag>\S+)")
_HIT = re.compile(r"Persistent compilation cache hit for '(?P<module>[^']+)' with key '(?P<key>[^']+)'")
_MISS = re.compile(r"PERSISTENT COMPILATION CACHE MISS for '(?P<module>[^']+)' with key '(?P<key>[^']+)'")
_WRITING = re.compile(r"Writing (?P<module>\S+) to persistent compilation cache with key '(?P<key>[^']+)'")
_ASCTIME = re.compile(r"(?P<date>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(?P<ms>\d{3})")
"""logging's default `asctime` (`2026-11-26 14:20:46,431`)."""
_NOT_WRITING = re.compile(r"Not writing persistent cache entry (?P<why>.*)")
_SANITIZE = re.compile(r"[^\w.-]")
_COMPILING = re.compile(r"Compiling (?P<fun>.+?) with global shapes and types (?P<types>.*?)\. Argument mapping")
_ARGUMENT = re.compile(r"ShapedArray\((?P<type>[^\[\]()]+\[[^\]]*\])(?P<rest>[^()]*)\)")
_MISS_AT = re.compile(r"TRACING CACHE MISS at (?P<at>.*):$")
_NEVER_SEEN = re.compile(r"^ {4}(?P<fun>\S+) id=\d+(?: defined at (?P<at>\S+))?$")
_SEEN = re.compile(r"^ {2}for (?P<fun>\S+?)(?: defined at (?P<at>\S+))?$")
_DIFFERENCE = re.compile(
    r"^ {2}\* (?:at (?:input path )?)?(?P<path>.+?)(?: differs)?[:,] now (?P<now>.+?) and before (?P<before>.+?)"
    r"(?:, so (?P<why>.+))?$"
)
_URL = re.compile(r"https?://\S+$")
"""The weak-types page jax appends to a types bullet."""
_HEADINGS: dict[str, ExplanationKind] = {
    "different input types": "types",
    "different input pytree": "pytree",
    "Tracing context doesn't match": "context",
    "Debug info doesn't match": "debug_info",
    "never seen function": "new_function",
}


@dataclass(frozen=True, slots=True)
class Argument:
    """One argument of a compile as jax typed it ("ShapedArray(float32[3], weak_type=True)")."""

    type: str
    """`float32[3]`: jax's dtype and shape."""
    weak_type: bool = False
    """A Python scalar's type (jax promotes it to the other operand's), not an array's."""


ExplanationKind = Literal["types", "pytree", "context", "debug_info", "new_function", "unknown"]


@dataclass(frozen=True, slots=True)
class Difference:
    """One bullet of jax's explanation: `* at x, now f32[]{weak_type=True} and before f32[]{weak_type=False}`,
    `* at input path [1]['y'], now ... and before ..., so ...`, `* jax_numpy_rank_promotion differs: now warn
    and before allow`."""

    path: str
    now: str
    before: str
    why: str = ""


@dataclass(frozen=True, slots=True)
class Explanation:
    """jax's explanation of one tracing-cache miss, its lines as jax wrote them and what they say."""

    function: str
    """The function's `__name__` (`f`, `<lambda>`, `add`)."""
    kind: ExplanationKind
    lines: tuple[str, ...]
    defined_at: str | None = None
    """`file:line` where jax names it; None for a built-in (no source)."""
    same_line: bool = False
    """A new function object where another was defined on the same line: one re-created each call."""
    differences: tuple[Difference, ...] = ()


@dataclass
class LogCompile:
    """One compile request jax logged (a persistent-cache hit included)."""

    fun_name: str | None
    """As jax names it in "Finished XLA compilation of ...": `jit(train_step)`."""
    module: str
    """The HloModule name (`jit_train_step`): the name in the cache lines, else jax's sanitising of fun_name."""
    seconds: float | None
    """Wall seconds of the compile (for a hit: of the cache read); None when the log stops before it."""
    cache: str = "off"
    """"hit", "written", "not written", "miss" (no outcome logged) or "off" (no cache lines: no cache in use)."""
    key: str | None = None
    why_not_written: str = ""
    components: dict[str, str] = field(default_factory=dict[str, str])
    """Cache-key component (jax's name) -> sha256 hex of that component alone."""
    xla_flags: tuple[str, ...] = ()
    """The flags jax hashed into the key (from XLA_FLAGS, LIBTPU_INIT_ARGS and argv, dump flags excluded)."""
    finished_at: float | None = None
    """When the compile ended: seconds of the log line's `asctime` (a local time: compare, never print);
    None where the log's format has no time."""
    arguments: tuple[Argument, ...] | None = None
    """The types jax compiled for, one per HLO parameter; None without its "Compiling" line."""
    explanation: Explanation | None = None
    """Why jax traced the function again (JAX_EXPLAIN_CACHE_MISSES); None where the log has no explanation."""

    @property
    def compiled(self) -> bool:
        """XLA compiled it (so it is in a dump); a persistent-cache hit loads an executable instead."""
        return self.cache != "hit"


@dataclass
class JaxLog:
    """A jax log: the compiles it records."""

    path: Path
    compiles: list[LogCompile]
    damaged: list[str] = field(default_factory=list[str])
    """The lines of jax's compile messages that could not be read, each with why (left out, not guessed)."""

    def by_module(self) -> dict[str, list[LogCompile]]:
        """Compiles per HloModule name, in log order."""
        grouped: dict[str, list[LogCompile]] = {}
        for compile_ in self.compiles:
            grouped.setdefault(compile_.module, []).append(compile_)
        return grouped


def module_name(fun_name: str) -> str:
    """Jax's HloModule name for a function name: `jit(f)` -> `jit_f` (mlir.sanitize_name, then rstrip "_")."""
    return _SANITIZE.sub("_", fun_name).rstrip("_")


def find_log(path: str | Path, any_name: bool = False) -> Path | None:
    """`path` itself when it is a file, else the jax log `capture` saved in that directory; with
    `any_name`, else the folder's only `*.log` file (a scan of the folder: not for dumps of 100,000 files)."""
    path = Path(path)
    if path.is_file():
        return path
    saved = next((path / name for name in LOG_NAMES if (path / name).is_file()), None)
    others = sorted(path.glob("*.log")) if any_name and saved is None and path.is_dir() else []
    return saved or (others[0] if len(others) == 1 else None)


def run_log(dump_path: str | Path | None, log_path: str | Path | None = None) -> JaxLog | None:
    """The log given, else the one `capture` saved in the dump directory when it logged compiles (a program
    that compiled nothing leaves one too), else None: no times known."""
    if log_path is not None:
        return read_jax_log(log_path)
    found = find_log(dump_path) if dump_path is not None and Path(dump_path).is_dir() else None
    log = _read(found) if found is not None else None
    return log if log is not None and log.compiles else None


def read_jax_log(path: str | Path) -> JaxLog:
    """The compiles of a jax log (a file, or a folder holding jax.log or one *.log); DumpError when none."""
    found = find_log(path, any_name=True)
    if found is None:
        raise DumpError(f"{path}: no jax log (a file, or a folder holding {' or '.join(LOG_NAMES)})")
    log = _read(found)
    if not log.compiles:
        raise DumpError(
            f"{found}: no compiles in this log: run with JAX_LOG_COMPILES=1 (seconds only) or "
            f"JAX_DEBUG_LOG_MODULES={','.join(DEBUG_LOG_MODULES)} (seconds, cache keys)"
        )
    return log


def _read(path: Path) -> JaxLog:
    damaged: list[str] = []
    return JaxLog(path, parse_jax_log(read_bytes(path).decode("utf-8", errors="replace"), damaged), damaged)


def parse_jax_log(text: str, damaged: list[str] | None = None) -> list[LogCompile]:
    """Compiles in log order; the lines of jax's compile messages that cannot be read go to `damaged`,
    each with why. A line printed twice in a row (a record that reached two handlers, as with
    JAX_DEBUG_LOG_MODULES beside JAX_LOGGING_LEVEL) counts once. jax's explanations wait for the next
    "Compiling" line of their function (one of a nested jit's, which compiles inside its caller, is
    dropped there)."""
    compiles: list[LogCompile] = []
    unread = damaged if damaged is not None else []
    pending = _Pending()
    explained: dict[str, Explanation] = {}
    lines = text.splitlines()
    previous = None
    for number, line in enumerate(lines):
        if line == previous:
            continue
        previous = line
        if finished := _FINISHED.search(line):
            compiles.append(pending.close(finished["fun"], float(finished["seconds"]), _logged_at(line)))
            pending = _Pending()
        elif _MISS_AT.search(line):
            found = explanation(_indented(lines, number))
            if found is None:
                unread.append(f"line {number + 1}: a cache-miss explanation naming no function, left out")
            else:
                explained[module_name(f"jit({found.function})")] = found
        elif compiling := _COMPILING.search(line):
            pending.arguments = arguments(compiling["types"])
            if pending.arguments is None:
                unread.append(f"line {number + 1}: argument types not read: {compiling['types'][:80]!r}")
            pending.explanation = explained.pop(module_name(compiling["fun"]), None)
            explained.clear()
        else:
            pending.read(line)
    if pending.key is not None:  # the log stops between a cache lookup and the end of its compile
        compiles.append(pending.close(None, None))
    return compiles


def _indented(lines: list[str], number: int) -> list[str]:
    """The line at `number` and the indented lines after it: one multi-line record."""
    end = number + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1
    return lines[number:end]


def arguments(text: str) -> tuple[Argument, ...] | None:
    """`(ShapedArray(float32[], weak_type=True), ShapedArray(int32[3]))` as arguments; None where an
    element is no ShapedArray jax prints (a cut line, another abstract value)."""
    found = [Argument(m["type"], "weak_type=True" in m["rest"]) for m in _ARGUMENT.finditer(text)]
    rest = _ARGUMENT.sub("", text.strip().removeprefix("(").removesuffix(")"))
    return tuple(found) if not rest.replace(",", "").strip() else None


def explanation(lines: list[str]) -> Explanation | None:
    """One of jax's tracing-cache-miss explanations (partial_eval.explain, jax 0.10.2 and 0.11.2); None
    where it names no function (a cut record)."""
    function = at = None
    kind: ExplanationKind = "unknown"
    for line in lines[1:]:
        match = _NEVER_SEEN.match(line) or _SEEN.match(line)
        if match and function is None:
            function, at = match["fun"], match["at"]
        heading: ExplanationKind | None = next((k for h, k in _HEADINGS.items() if line.strip().startswith(h)), None)
        kind = heading if heading is not None and kind in ("unknown", "new_function") else kind
    if function is None:
        return None
    bullets = [m for line in lines if (m := _DIFFERENCE.match(line))]
    differences = tuple(Difference(m["path"], m["now"], _URL.sub("", m["before"]), m["why"] or "") for m in bullets)
    same_line = any("another function defined on the same line" in line for line in lines)
    said = [lines[0][lines[0].find("TRACING CACHE MISS") :], *lines[1:]]
    return Explanation(function, kind, tuple(_URL.sub("", line).rstrip() for line in said), at, same_line, differences)


class _Pending:
    """What the lines of the compile in progress said so far."""

    def __init__(self) -> None:
        self.components: dict[str, str] = {}
        self.flags: dict[str, None] = {}
        self.module: str | None = None
        self.key: str | None = None
        self.cache = "off"
        self.why = ""
        self.arguments: tuple[Argument, ...] | None = None
        self.explanation: Explanation | None = None

    def read(self, line: str) -> None:
        if match := _COMPONENT.search(line):
            self.components[match["component"]] = match["hash"]
        elif match := _FLAG.search(line):
            self.flags[match["flag"]] = None
        elif match := _HIT.search(line) or _MISS.search(line):
            self.module, self.key = match["module"], match["key"]
            self.cache = "hit" if match.re is _HIT else "miss"
        elif _WRITING.search(line):
            self.cache = "written"
        elif match := _NOT_WRITING.search(line):
            self.cache, self.why = "not written", _why_not_written(match["why"])

    def close(self, fun_name: str | None, seconds: float | None, at: float | None = None) -> LogCompile:
        module = self.module or module_name(fun_name or "?")
        flags = tuple(self.flags)
        return LogCompile(
            fun_name,
            module,
            seconds,
            self.cache,
            self.key,
            self.why,
            self.components,
            flags,
            at,
            self.arguments,
            self.explanation,
        )


def _logged_at(line: str) -> float | None:
    """The line's `asctime` as seconds (a naive local time), None without one."""
    found = _ASCTIME.search(line)
    if found is None:
        return None
    return datetime.fromisoformat(found["date"]).timestamp() + int(found["ms"]) / 1000


def _why_not_written(text: str) -> str:
    """Jax's reason, without the key and module name it repeats: "it took < 1.00 seconds to compile (0.01s)"."""
    text = re.sub(r"^(for '[^']*' |with key '[^']*' )", "", text.strip())
    return text.removeprefix("because ").removeprefix("since ")
