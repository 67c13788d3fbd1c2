"""Analyses: plain functions over the model that return lists of frozen dataclass rows (no pandas, typer or rich)."""
