"""Each topic's words: its commands' typed reports as a `Document` (the JSON it writes, the tables people
read, the CSV rows), and its section of the `report` page (`report.sections.Section`).

One function per command, named after its report, and one `*_section` per topic of the report, in the
module of the topic (a command imports its own views and their analyses only; `report.dump_report`
composes the sections). JSON is built from the report's rows (numbers keep their types); tables show
the columns that fit a terminal, Markdown may show more; CSV is one table with every column.
"""
