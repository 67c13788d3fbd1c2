"""Command-line interface (the only package that imports typer and rich)."""

from xlainspect.cli.app import app, main

__all__ = ["app", "main"]
