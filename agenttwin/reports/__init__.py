"""Reports of stored evaluations: JUnit XML for CI, Markdown for a pull request, one self-contained HTML file."""

from agenttwin.reports.html import render_html
from agenttwin.reports.junit import render_junit
from agenttwin.reports.markdown import render_markdown

__all__ = ["render_html", "render_junit", "render_markdown"]
