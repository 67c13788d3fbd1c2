"""Which modules of a dump a command reads: one function, or names matching a regex (`--function`,
`--module-re`); a filter that matches nothing is an error naming near matches."""

from __future__ import annotations

import re

from xlainspect.dump.directory import Dump
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import NoMatchError, XlaInspectError, literal, no_match
from xlainspect.hlo.model import Module


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


def _module_pattern(module_re: str) -> re.Pattern[str]:
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
