"""One library function per CLI command: read the inputs, run the analyses, return a typed report.

A command of the CLI is these functions' options, one call and `emit`; a Python user calls the same
function (`xlainspect.fusions_report("dump/")`) and gets the same rows. Each report carries the files it
left out and why (`skipped`), so nothing that failed to parse is counted as zero. Long calls take a
`progress` (`xlainspect.progress`), which the CLI draws as a bar.

They live in one module per group of commands, imported by its commands alone: a run creates the
report classes of its own command only (a dataclass takes 0.4 to 1 ms to create, and there are 18).

The runner they share (modules selected, analysed once each, cached, shared with workers, input errors
skipped) is `analysis.runner`, which the analyses under them use too.
"""
