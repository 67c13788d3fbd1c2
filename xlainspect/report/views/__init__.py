"""Each command's typed report as a `Document`: the JSON it writes, the tables people read, the CSV rows.

One function per command, named after its report, in the module of its group of commands (a command
imports its own views and their analyses only). JSON is built from the report's rows (numbers keep
their types); tables show the columns that fit a terminal, Markdown may show more; CSV is one table
with every column.
"""
