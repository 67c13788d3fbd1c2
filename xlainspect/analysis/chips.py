"""The chips a roofline is drawn for: peak dense FLOP/s per dtype class, HBM and interconnect
bandwidth, read from `xlainspect/data/chips.json` (each figure with its public source).

`dump_chip_key` picks the chip a dump was compiled for where its files say: a GPU dump's
`gpu_target_config.pbtxt` names the device (`device_description_str: "NVIDIA H200"`; H100 and H200
share compute capability 9.0), else its file names give the compute capability (`sm_9.0a`); a TPU
dump's `target_arguments.txt` (or the folder's `topology.textproto`, `tpu_comp_env.txt`) gives the
`tpu_topology_args` version and variant. CPU dumps have no roofline chip.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict, cast

from xlainspect.dump.module import DumpModule
from xlainspect.dump.textproto import text_field
from xlainspect.errors import XlaInspectError

DTYPE_CLASSES = ("bf16", "f32", "fp8", "int8")


class ChipEntry(TypedDict):
    """One chip of `xlainspect/data/chips.json`, as the file spells it."""

    name: str
    platform: str
    peak_flops: dict[str, float | None]
    hbm_bandwidth: float
    ici_bandwidth: float
    sources: dict[str, str]
    launch_seconds: NotRequired[float]
    device_description: NotRequired[str]
    compute_capability: NotRequired[str]
    tpu_version: NotRequired[str]
    tpu_variant: NotRequired[str]


@dataclass(slots=True)
class Chip:
    """A roofline's chip: peak FLOP/s per dtype class and memory and interconnect bandwidth."""

    key: str
    name: str
    flops: dict[str, float | None]
    """Peak dense FLOP/s per dtype class; None where the chip has no such unit."""
    hbm_bandwidth: float
    ici_bandwidth: float
    launch_seconds: float = 0.0
    """The least time a kernel takes, launch included: a floor under an op's roofline time in a profile
    (chips.json cites each figure; 0: no floor)."""

    def peak_flops(self, dtype: str) -> float:
        """The peak for an op whose output is `dtype`; a class the chip lacks runs at its bf16 peak."""
        # every chip has a bf16 peak: chips.json gives one for each, --peak-flops sets every class
        return cast(float, self.flops.get(dtype_class(dtype)) or self.flops["bf16"])


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
def chip_table() -> dict[str, ChipEntry]:
    """The chips of the data file, by key."""
    # beside the package's modules, as the wheel installs it (importlib.resources, for zipped packages,
    # costs every command that draws a roofline 5 ms of imports)
    text = (Path(__file__).parents[1] / "data" / "chips.json").read_text(encoding="utf-8")
    chips: dict[str, ChipEntry] = json.loads(text)["chips"]
    return chips


def get_chip(
    key: str,
    peak_flops: float | None = None,
    hbm_bandwidth: float | None = None,
    ici_bandwidth: float | None = None,
    launch_seconds: float | None = None,
) -> Chip:
    """A chip of the table, with any figure overridden (`--peak-flops` replaces every dtype's peak)."""
    entry = chip_table().get(key.lower())
    if entry is None:
        raise XlaInspectError(f"unknown chip {key!r}; known chips: {', '.join(chip_table())}")
    flops: dict[str, float | None] = (
        dict.fromkeys(DTYPE_CLASSES, peak_flops) if peak_flops else dict(entry["peak_flops"])
    )
    return Chip(
        key.lower(),
        entry["name"],
        flops,
        hbm_bandwidth or entry["hbm_bandwidth"],
        ici_bandwidth or entry["ici_bandwidth"],
        launch_seconds if launch_seconds is not None else entry.get("launch_seconds", 0.0),
    )


def custom_chip(
    peak_flops: float, hbm_bandwidth: float, ici_bandwidth: float | None, launch_seconds: float | None = None
) -> Chip:
    """A chip given only by its figures (all of --peak-flops and --hbm-bandwidth, without --chip); no
    launch floor unless given."""
    flops: dict[str, float | None] = dict.fromkeys(DTYPE_CLASSES, peak_flops)
    return Chip("custom", "custom", flops, hbm_bandwidth, ici_bandwidth or float("inf"), launch_seconds or 0.0)


def default_chip_key(platform: str | None, platform_tag: str | None) -> str | None:
    """The chip a GPU dump was compiled for, by compute capability; None where the dump does not say."""
    if platform != "gpu" or not platform_tag:
        return None
    capability = platform_tag.removeprefix("sm_").rstrip("af")
    return next((key for key, entry in chip_table().items() if entry.get("compute_capability") == capability), None)


def dump_chip_key(dump_module: DumpModule) -> str | None:
    """The chip a dump module was compiled for, as its files say; None where they do not (CPU)."""
    if dump_module.platform == "gpu":
        description = text_field(_side_texts(dump_module, ("gpu_target_config.pbtxt",)), "device_description_str")
        by_name = [
            key
            for key, entry in chip_table().items()
            if description and "device_description" in entry and description.startswith(entry["device_description"])
        ]
        return by_name[0] if by_name else default_chip_key(dump_module.platform, dump_module.platform_tag)
    if dump_module.platform == "tpu":
        texts = _side_texts(dump_module, ("target_arguments.txt", "topology.textproto", "tpu_comp_env.txt"))
        version, variant = text_field(texts, "version"), text_field(texts, "variant")
        return next(
            (
                key
                for key, entry in chip_table().items()
                if version and entry.get("tpu_version") == version and entry.get("tpu_variant") == variant
            ),
            None,
        )
    return None


def _side_texts(dump_module: DumpModule, suffixes: tuple[str, ...]) -> list[str]:
    """The module's side files ending in `suffixes` (then the dump folder's file of that name), in
    that order; files that cannot be read are left out (a missing file names no chip)."""
    folders = dict.fromkeys(Path(f.location).parent for f in dump_module.files)
    paths = [Path(f.location) for suffix in suffixes for f in dump_module.files if f.location.endswith(suffix)]
    paths += [folder / suffix for suffix in suffixes for folder in folders]
    texts: list[str] = []
    for path in dict.fromkeys(paths):
        try:
            texts.append(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
    return texts
