"""`cost`: FLOPs, bytes and roofline time per op and module (`profile` sets measured time beside it:
`analysis/commands/profile.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from xlainspect.analysis.chips import chip_table, custom_chip, dump_chip_key, get_chip
from xlainspect.analysis.cost import module_cost
from xlainspect.analysis.runner import Paths, Selection, input_paths, remembered, run_selected
from xlainspect.analysis.tabular import Tabular
from xlainspect.dump.directory import load_dump
from xlainspect.dump.module import DumpModule, SkippedFile
from xlainspect.errors import UsageError, XlaInspectError, literal
from xlainspect.progress import Progress, silent

if TYPE_CHECKING:
    from xlainspect.analysis.chips import Chip
    from xlainspect.analysis.cost import ModuleCost


@dataclass(frozen=True, slots=True)
class ChipChoice:
    """The chip a roofline is drawn for: a name (`h100`) or the figures of one."""

    key: str | None = None
    peak_flops: float | None = None
    hbm_bandwidth: float | None = None
    ici_bandwidth: float | None = None
    launch_seconds: float | None = None
    """The least time a kernel takes (a floor under each op's roofline in a profile); None: the chip's."""


@dataclass
class CostReport(Tabular):
    """FLOPs, bytes and roofline time per module, with each module's slowest ops."""

    modules: list[ModuleCost]
    skipped: list[SkippedFile]


@remembered("paths")
def cost_report(
    paths: Paths,
    selection: Selection = Selection(),
    chip: ChipChoice = ChipChoice(),
    *,
    top: int | None = 10,
    progress: Progress = silent,
) -> CostReport:
    """FLOPs, transcendentals, bytes and roofline time per op and module for one call as it executes
    (loops times their trip counts, custom calls by target), XLA's HloCostAnalysis figures beside;
    each module keeps its `top` ops by roofline time per call (None: all)."""
    key = f"cost:{chip}:{top}:{sorted(chip_table().items())}"  # the table is data, not code
    dump = load_dump(input_paths(paths))
    rows, skipped, _ = run_selected(
        dump, key, lambda m: module_cost(m.module(selection.stage), chip_for(m, chip), top), selection, progress
    )
    return CostReport(rows, [*dump.skipped, *skipped])


def chip_for(dump_module: DumpModule | None, choice: ChipChoice) -> Chip | None:
    """The chip named, else the one the dump was compiled for (its GPU or TPU, as its files say); None
    where neither says (counts without times). Figures without a chip to complete them are a usage error."""
    figures = (choice.peak_flops, choice.hbm_bandwidth, choice.ici_bandwidth)
    if choice.key is None and choice.peak_flops and choice.hbm_bandwidth:
        return custom_chip(choice.peak_flops, choice.hbm_bandwidth, choice.ici_bandwidth, choice.launch_seconds)
    key = choice.key or (dump_chip_key(dump_module) if dump_module else None)
    if key is None and not any(figures):
        return None
    if key is None:
        where = dump_module.label if dump_module else "the trace"
        raise UsageError(
            f"{literal(where)}: the dump does not say which chip it was compiled for, so $peak_flops and "
            f"$hbm_bandwidth are needed together, or $chip, one of: {', '.join(chip_table())}"
        )
    try:
        return get_chip(key, *figures, launch_seconds=choice.launch_seconds)
    except XlaInspectError as error:
        raise UsageError(str(error)) from None
