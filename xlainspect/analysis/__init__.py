"""Analyses: plain functions over the model that return lists of dataclass rows (no pandas, typer or rich).

Rows are `@dataclass(slots=True)`, not frozen: on Python 3.11 a frozen class compiles two more methods
when its module is imported and its `__init__` sets each field through `object.__setattr__` (4x slower
per row); the analyses' frozen rows were a third of their import time, which every cold command pays.
Values that are hashed (shapes, layouts, metadata) and the options that are default arguments
(`Selection`, `ChipChoice`) stay frozen."""
