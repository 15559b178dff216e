"""One self-contained HTML file a person can open: no scripts, no network (a Content-Security-Policy forbids
any fetch), charts as inline SVG. Jinja2 escapes every value, so an agent's reply shows as text, whatever it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

import jinja2

from agenttwin.reports.model import build_view
from agenttwin.stored_evaluation import StoredEvaluation
from evaluation.gate import GateDecision

CLASS_COLORS = {
    "NEW_CRITICAL_FAILURE": "#cf222e",
    "REGRESSED": "#bc4c00",
    "FLAKY": "#8250df",
    "IMPROVED": "#1a7f37",
    "UNCHANGED": "#8c959f",
    "INCOMPLETE": "#9a6700",
}


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("agenttwin.reports", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2")


def render_html(evaluations: Sequence[tuple[StoredEvaluation, GateDecision]]) -> str:
    views = [build_view(stored, decision) for stored, decision in evaluations]
    return _template().render(views=views, colors=CLASS_COLORS)
