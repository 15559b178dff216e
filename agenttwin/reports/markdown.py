"""A Markdown summary short enough for a pull-request comment: the gate, counts, new critical failures,
contradictions and first divergences. Text from the agent or the scenario is escaped, so a reply cannot
inject links, images or HTML into the comment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agenttwin.reports.model import EvaluationView, build_view
from agenttwin.stored_evaluation import StoredEvaluation
from evaluation.gate import GateDecision

# Untrusted text always sits mid-line here, so only inline syntax needs escaping: emphasis, code, links and
# images (brackets), raw HTML and entities, table cells.
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~&])")
MAX_CELL = 300
BADGE = {"PASS": "✅ PASS", "WARN": "⚠️ WARN", "BLOCK": "⛔ BLOCK"}


_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def md(text: object, limit: int = MAX_CELL) -> str:
    """One line of untrusted text, every Markdown/HTML-significant character escaped, control characters gone."""
    flat = " ".join(_CONTROL.sub("\ufffd", str(text)).split())
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return _SPECIAL.sub(r"\\\1", flat)


def _section(view: EvaluationView) -> list[str]:
    gate = view.gate
    badge = BADGE.get(gate.decision, gate.decision)
    lines = [
        f"## AgentTwin: {md(view.candidate_agent)} vs {md(view.baseline_agent)} — {badge}",
        "",
        f"Evaluation {md(view.evaluation_id, 80)} · run seed {view.run_seed} · "
        + (f"{view.trials} trials per case · " if view.trials > 1 else "")
        + f"evaluator {md(view.evaluator_version)} · gate policy {md(gate.policy.name)} `{gate.policy.hash[:12]}`",
        "",
        f"> {md(gate.summary, 1000)}",
        "",
        f"**{md(view.counts_line)}**",
    ]
    ncf = [c for c in view.cases if c.classification == "NEW_CRITICAL_FAILURE"]
    if ncf:
        lines += ["", "### New critical failures"]
        lines += [f"- **{md(c.scenario)}**: {md(c.reason)}" for c in ncf]
    if view.contradictions:
        lines += ["", "### Contradictions: claimed success, disproved by the twin's state"]
        for k in view.contradictions:
            lines.append(
                f"- **{md(k.scenario)}** ({md(k.side.lower())} {md(k.agent)}): claimed {md(k.claimed_as)}, "
                f"verified {md(k.verified)}. Reply: “{md(k.reply or '')}”. Evidence: {md(k.detail)}"
            )
    changed = [c for c in view.cases if c.classification != "UNCHANGED"]
    if changed:
        lines += ["", "| scenario | classification | reason | first divergence |", "|---|---|---|---|"]
        for c in changed:
            divergence = md(c.divergence.get("summary")) if c.divergence else ""
            lines.append(f"| {md(c.scenario)} | {c.classification} | {md(c.reason)} | {divergence} |")
    return lines


def render_markdown(evaluations: Sequence[tuple[StoredEvaluation, GateDecision]]) -> str:
    lines: list[str] = []
    for stored, decision in evaluations:
        if lines:
            lines.append("")
        lines += _section(build_view(stored, decision))
    return "\n".join(lines) + "\n"
