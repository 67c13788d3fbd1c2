"""Imports every command module so that its @app.command() functions register on `app`."""

from xlainspect.cli import (
    cache_cmds,  # noqa: F401
    cost_cmd,  # noqa: F401
    diff_cmd,  # noqa: F401
    doctor_cmd,  # noqa: F401
    dump_cmds,  # noqa: F401
    graph_cmds,  # noqa: F401
    layout_cmds,  # noqa: F401
    memory_cmd,  # noqa: F401
    parse_cmd,  # noqa: F401
    profile_cmd,  # noqa: F401
    report_cmd,  # noqa: F401
)
