"""`plain_table.draw` prints what rich prints for the same table, at any width, or declines (None)."""

import io
import random

import pytest
from rich.console import Console

from xlainspect.cli.plain_table import draw
from xlainspect.cli.render import DRAWN_ROWS, rich_table
from xlainspect.report.document import Table

WORDS = [
    "module_0012.jit__normal",
    "f32[128,256]{1,0:T(8,128)}",
    "x",
    "",
    "bytes accessed",
    "1,234,567",
    "%add.3 = f32[] add(a, b)",
    "  lead",
    "trail  ",
    "a  b",
    "a-long-token-without-any-blank-in-it-to-fold-xxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "█████",
    "a→b",
    "中文",
]


def by_rich(tab: Table, width: int, styled: bool) -> str:
    colours = {"color_system": "truecolor", "force_terminal": True} if styled else {"color_system": None}
    console = Console(file=io.StringIO(), width=width, soft_wrap=False, **colours)
    console.print(rich_table(tab))
    return console.file.getvalue()


def random_table(rng: random.Random) -> Table:
    def text(words):
        return " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))

    columns = tuple(text([w for w in WORDS if "[" not in w]).strip() or "c" for _ in range(rng.randint(1, 8)))
    cells = [lambda: rng.randint(0, 10 ** rng.randint(0, 12)), lambda: rng.random() * 1000, lambda: None]
    rows = tuple(
        tuple(rng.choice([*cells, *[lambda: text(WORDS)] * 3])() for _ in columns) for _ in range(rng.randint(0, 5))
    )
    title = rng.choice([None, "", "cost per module", "a title long enough to wrap " * rng.randint(1, 6)])
    return Table(title=title, columns=columns, rows=rows, right=tuple(c for c in columns if rng.random() < 0.2))


@pytest.mark.parametrize("seed", range(4))
def test_draws_what_rich_draws(seed):
    """Uncoloured (a pipe) for even seeds, with a colour terminal's escape codes for odd ones."""
    rng = random.Random(seed)
    styled = bool(seed % 2)
    drawn = 0
    for _ in range(150):
        tab = random_table(rng)
        width = rng.choice([30, 60, 80, 120, 200, rng.randint(8, 250)])
        ours = draw(tab, tab.rows[:DRAWN_ROWS], width, styled)
        if ours is not None:
            drawn += 1
            assert ours == by_rich(tab, width, styled), (tab, width)
    assert drawn > 30  # most tables take the plain path


def test_declines_markup_and_wide_text():
    assert draw(Table("[bold]x", ("a",), ()), [], 80) is None
    assert draw(Table(None, ("a",), (("中文",),)), [("中文",)], 80) is None
