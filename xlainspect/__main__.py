"""`python -m xlainspect ...` runs the CLI (the same as the `xlainspect` script)."""

from xlainspect.cli import main

main()
