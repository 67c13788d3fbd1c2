"""Command-line interface (the only package that imports typer and rich). Importing it registers every
command on `app`, so `from xlainspect.cli import app` (or `xlainspect.cli.app`) is the whole CLI."""

from xlainspect.cli import commands  # noqa: F401  (each command module adds its commands to `app`)
from xlainspect.cli.app import app, main, run

__all__ = ["app", "main", "run"]
