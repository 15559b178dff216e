"""Run by the site build (mkdocs-gen-files): the reference pages generated from their sources."""

import mkdocs_gen_files

from agenttwin.reference_docs import cli_reference, events_reference, sql_reference

for path, render in (
    ("reference/cli-commands.md", cli_reference),
    ("reference/events.md", events_reference),
    ("reference/ddl.md", sql_reference),
):
    with mkdocs_gen_files.open(path, "w") as page:
        page.write(render())
