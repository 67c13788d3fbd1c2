"""Imports every command module so that its @app.command() functions register on `app`."""

from xlainspect.cli import parse_cmd  # noqa: F401
from xlainspect.cli import layout_cmds  # noqa: F401
from xlainspect.cli import graph_cmds  # noqa: F401
from xlainspect.cli import doctor_cmd  # noqa: F401
from xlainspect.cli import dump_cmds  # noqa: F401
from xlainspect.cli import memory_cmd  # noqa: F401
from xlainspect.cli import diff_cmd  # noqa: F401
from xlainspect.cli import cache_cmds  # noqa: F401
from xlainspect.cli import cost_cmd  # noqa: F401
from xlainspect.cli import report_cmd  # noqa: F401
from xlainspect.cli import profile_cmd  # noqa: F401
