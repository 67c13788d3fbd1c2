"""Quantities as people read them on a chart: bytes in KiB/MiB/GiB, rates with an SI prefix. Stdlib only."""

from __future__ import annotations

_BINARY = ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB")
_SI = ("", "k", "M", "G", "T", "P", "E")


def byte_size(count: int) -> str:
    """`1.5 MiB`: powers of 1,024 (as memory is allocated), three significant digits; `512 bytes` below a KiB."""
    value, unit = float(count), 0
    while abs(value) >= 1024 and unit < len(_BINARY) - 1:
        value, unit = value / 1024, unit + 1
    return f"{count:,} bytes" if unit == 0 else f"{_digits(value)} {_BINARY[unit]}"


def rate(value: float, unit: str) -> str:
    """`989 TFLOP/s`, `4.8 TB/s`: powers of 1,000 (as datasheets give peaks and bandwidths)."""
    prefix = 0
    while abs(value) >= 1000 and prefix < len(_SI) - 1:
        value, prefix = value / 1000, prefix + 1
    return f"{_digits(value)} {_SI[prefix]}{unit}"


def _digits(value: float) -> str:
    """Three significant digits, never in e-notation (`1000`, `56.5`, `3`)."""
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"
