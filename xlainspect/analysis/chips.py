"""The chips a roofline is drawn for: peak dense FLOP/s per dtype class, HBM and interconnect
bandwidth, read from `xlainspect/data/chips.json` (each figure with its public source).

`choose_chip` picks the chip a dump was compiled for where its files say (a GPU dump names its
compute capability: sm_8.0 A100, sm_9.0 H100, sm_10.0 B200); TPU dumps name no generation and CPU
dumps have no roofline chip, so there the caller must name one.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from xlainspect.errors import XlaInspectError

DTYPE_CLASSES = ("bf16", "f32", "fp8", "int8")


@dataclass(slots=True)
class Chip:
    """A roofline's chip: peak FLOP/s per dtype class and memory and interconnect bandwidth."""

    key: str
    name: str
    flops: dict[str, float | None]
    """Peak dense FLOP/s per dtype class; None where the chip has no such unit."""
    hbm_bandwidth: float
    ici_bandwidth: float

    def peak_flops(self, dtype: str) -> float:
        """The peak for an op whose output is `dtype`; a class the chip lacks runs at its bf16 peak."""
        return self.flops.get(dtype_class(dtype)) or self.flops["bf16"]


def dtype_class(dtype: str) -> str:
    """bf16/f16 -> bf16, f8* -> fp8, integers and pred -> int8, anything else (f32, f64, complex) -> f32."""
    if dtype in ("bf16", "f16"):
        return "bf16"
    if dtype.startswith("f8") or dtype.startswith("f4"):
        return "fp8"
    if dtype[:1] in ("s", "u") or dtype == "pred":
        return "int8"
    return "f32"


@functools.cache
def chip_table() -> dict[str, dict]:
    """The chips of the data file, by key."""
    # beside the package's modules, as the wheel installs it (importlib.resources, for zipped packages,
    # costs every command that draws a roofline 5 ms of imports)
    text = (Path(__file__).parents[1] / "data" / "chips.json").read_text(encoding="utf-8")
    return json.loads(text)["chips"]


def get_chip(
    key: str, peak_flops: float | None = None, hbm_bandwidth: float | None = None, ici_bandwidth: float | None = None
) -> Chip:
    """A chip of the table, with any figure overridden (`--peak-flops` replaces every dtype's peak)."""
    entry = chip_table().get(key.lower())
    if entry is None:
        raise XlaInspectError(f"unknown chip {key!r}; known chips: {', '.join(chip_table())}")
    flops = dict.fromkeys(DTYPE_CLASSES, peak_flops) if peak_flops else dict(entry["peak_flops"])
    return Chip(
        key.lower(),
        entry["name"],
        flops,
        hbm_bandwidth or entry["hbm_bandwidth"],
        ici_bandwidth or entry["ici_bandwidth"],
    )


def custom_chip(peak_flops: float, hbm_bandwidth: float, ici_bandwidth: float | None) -> Chip:
    """A chip given only by its figures (all of --peak-flops and --hbm-bandwidth, without --chip)."""
    return Chip(
        "custom", "custom", dict.fromkeys(DTYPE_CLASSES, peak_flops), hbm_bandwidth, ici_bandwidth or float("inf")
    )


def default_chip_key(platform: str | None, platform_tag: str | None) -> str | None:
    """The chip a GPU dump was compiled for, by compute capability; None where the dump does not say."""
    if platform != "gpu" or not platform_tag:
        return None
    capability = platform_tag.removeprefix("sm_").rstrip("af")
    return next((key for key, entry in chip_table().items() if entry.get("compute_capability") == capability), None)
