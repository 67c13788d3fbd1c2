"""Command-line interface (the only package that imports typer and rich): `app` is the whole CLI, each
command loaded from its module when a run names it."""

from xlainspect.cli.app import app, main

__all__ = ["app", "main"]
