"""The production page (`agenttwin report --production --html FILE`): per-version rates over time, the version
alarms with their evidence, and the latest contradictions with the agent's reply beside the verification.

Self-contained HTML: inline CSS and inline SVG charts, no script, nothing fetched. The data comes from the
projections (v_version_windows, v_version_alarms, v_contradictions, claims, verified_outcomes); this module
only renders rows it is given, in a stable order, so the same rows give the same page byte for byte.
"""

from __future__ import annotations

import html
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

Row = dict[str, Any]
METRICS = (
    ("contradiction_rate", "contradictions", "verified_traces", "Contradiction rate"),
    ("verified_failure_rate", "verified_failures", "verified_traces", "Verified-failure rate"),
    ("escalation_rate", "escalations", "traces", "Escalation rate"),
)
COLORS = ("#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#57606a")
WIDTH, HEIGHT, PAD = 560, 220, 40


@dataclass
class ProductionData:
    windows: list[Row] = field(default_factory=list)  # v_version_windows rows
    alarms: list[Row] = field(default_factory=list)  # v_version_alarms rows
    contradictions: list[Row] = field(default_factory=list)  # latest first, with final_answer and reason


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _time(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if isinstance(value, datetime) else _e(value)


def _pct(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1%}"


def _series(rows: Sequence[Row], events: str, trials: str) -> list[tuple[datetime, float, int]]:
    """(window, rate so far, traces so far) of one version: the cumulative rate at the end of each window."""
    out, e, n = [], 0, 0
    for r in sorted(rows, key=lambda r: r["window_start"]):
        e, n = e + int(r[events] or 0), n + int(r[trials] or 0)
        if n:
            out.append((r["window_start"], e / n, n))
    return out


def _chart(title: str, versions: dict[str, list[tuple[datetime, float, int]]], start: datetime, end: datetime) -> str:
    top = max([rate for points in versions.values() for _, rate, _ in points] + [0.01])
    span = max((end - start).total_seconds(), 60.0)

    def x(t: datetime) -> float:
        return PAD + (WIDTH - 2 * PAD) * (t - start).total_seconds() / span

    def y(rate: float) -> float:
        return HEIGHT - PAD + -(HEIGHT - 2 * PAD) * rate / top

    parts = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{_e(title)}">',
        f'<line x1="{PAD}" y1="{HEIGHT - PAD}" x2="{WIDTH - PAD}" y2="{HEIGHT - PAD}" stroke="#8c959f"/>',
        f'<line x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{HEIGHT - PAD}" stroke="#8c959f"/>',
        f'<text x="{PAD - 4}" y="{PAD + 4}" text-anchor="end" font-size="10">{top:.0%}</text>',
        f'<text x="{PAD - 4}" y="{HEIGHT - PAD + 4}" text-anchor="end" font-size="10">0%</text>',
        f'<text x="{PAD}" y="{HEIGHT - PAD + 16}" font-size="10">{_time(start)}</text>',
        f'<text x="{WIDTH - PAD}" y="{HEIGHT - PAD + 16}" text-anchor="end" font-size="10">{_time(end)}</text>',
    ]
    for i, (version, points) in enumerate(sorted(versions.items())):
        color = COLORS[i % len(COLORS)]
        coords = " ".join(f"{x(t):.1f},{y(rate):.1f}" for t, rate, _ in points)
        parts.append(
            f'<polyline class="series" data-version="{_e(version)}" fill="none" stroke="{color}" stroke-width="2" '
            f'points="{coords}"/>'
        )
        last = points[-1] if points else None
        label = f"{version}: {last[1]:.1%} of {last[2]}" if last else version
        parts.append(
            f'<text x="{WIDTH - PAD + 4 - 150}" y="{PAD + 14 * i}" font-size="11" fill="{color}">{_e(label)}</text>'
        )
    parts.append("</svg>")
    return f"<figure><figcaption>{_e(title)} (so far, by minute)</figcaption>{''.join(parts)}</figure>"


def _charts(windows: Sequence[Row]) -> str:
    by_agent: dict[tuple[str, str], dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for r in windows:
        by_agent[(r.get("tenant") or "", r["agent"])][r["agent_version"]].append(r)
    if not by_agent:
        return "<p>No production traces of any agent version yet.</p>"
    out = []
    for (tenant, agent), versions in sorted(by_agent.items()):
        times = [r["window_start"] for rows in versions.values() for r in rows]
        start, end = min(times), max(times)
        counts = ", ".join(
            f"{_e(v)} {sum(int(r['traces']) for r in rows)} traces" for v, rows in sorted(versions.items())
        )
        out.append(f'<section class="agent"><h3>{_e(agent)} <small>{_e(tenant)} · {counts}</small></h3>')
        for _, events, trials, title in METRICS:
            series = {v: _series(rows, events, trials) for v, rows in versions.items()}
            out.append(_chart(f"{agent}: {title}", series, start, end))
        out.append("</section>")
    return "".join(out)


def _alarm(a: Row) -> str:
    state = str(a.get("state") or "open")
    traces = list(a.get("contradicted_traces") or [])
    shown = "".join(f"<li><code>{_e(t)}</code></li>" for t in traces[:10])
    more = f"<li>and {len(traces) - 10} more</li>" if len(traces) > 10 else ""
    replaced = f" · replaced by {_e(a['replaced_by'])}" if a.get("replaced_by") else ""
    mine = (
        f'<p class="mine">Draft scenarios from them: <code>agenttwin mine --regression {_e(a["alarm_id"])} '
        "-o drafts/</code></p>"
        if traces
        else ""
    )
    return (
        f'<div class="alarm {_e(state)}" id="alarm-{_e(a["alarm_id"])}">'
        f'<span class="badge" role="status">{"REGRESSED" if state == "open" else "CLEARED"}</span> '
        f"<strong>{_e(a['agent'])} {_e(a['candidate_version'])}</strong> vs {_e(a['baseline_version'])}: "
        f'<span class="metric">{_e(str(a["metric"]).replace("_", " "))}</span> '
        f'<span class="rates">{_pct(a["candidate_rate"])} of {_e(a["candidate_traces"])} verified traces vs '
        f"{_pct(a['baseline_rate'])} of {_e(a['baseline_traces'])}</span>"
        f'<p class="statistic">e-value {float(a["e_value"]):.3g} ≥ threshold {float(a["threshold"]):.3g} '
        f"(policy {_e(a['policy'])}; detected {_time(a['detected_at'])}{replaced})</p>"
        f"{'<p>Contradicted traces:</p><ul>' + shown + more + '</ul>' if traces else ''}{mine}</div>"
    )


def _contradiction(c: Row) -> str:
    who = f"{_e(c.get('agent'))} {_e(c.get('agent_version'))}"
    return (
        '<div class="pair contradiction">'
        f'<div class="claim"><h4>{who} replied (claimed {_e(c.get("claimed_status"))})</h4>'
        f"<blockquote>{_e(c.get('final_answer') or '(no final answer captured)')}</blockquote>"
        f"<p><code>{_e(c.get('trace_id'))}</code> · {_time(c.get('detected_at'))}</p></div>"
        f'<div class="evidence"><h4>Verified {_e(c.get("verified_status"))} ({_e(c.get("source"))})</h4>'
        f"<pre>{_e(c.get('reason') or c.get('detail'))}</pre></div></div>"
    )


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:24px;color:#1f2328;max-width:1240px}
h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:28px}
h3 small{font-weight:normal;color:#57606a;font-size:13px}
.badge{display:inline-block;padding:2px 8px;border-radius:10px;color:#fff;font-weight:600;font-size:12px}
.alarm{border:1px solid #d0d7de;border-radius:6px;padding:10px 12px;margin:8px 0}
.alarm.open{border-left:6px solid #cf222e}.alarm.open .badge{background:#cf222e}
.alarm.cleared{border-left:6px solid #1a7f37}.alarm.cleared .badge{background:#1a7f37}
.statistic{color:#57606a;margin:4px 0}ul{margin:4px 0}
figure{display:inline-block;margin:6px 12px 6px 0}figcaption{font-size:13px;color:#57606a}
.pair{display:flex;gap:12px;margin:10px 0}.pair>div{flex:1;border:1px solid #d0d7de;border-radius:6px;padding:8px}
.claim{background:#fff8f8}.evidence{background:#f6f8fa}pre{white-space:pre-wrap;word-break:break-all;margin:0}
blockquote{margin:4px 0;font-style:italic}h4{margin:0 0 4px 0;font-size:14px}
"""


def render_production(data: ProductionData) -> str:
    open_alarms = [a for a in data.alarms if a.get("state") == "open"]
    closed = [a for a in data.alarms if a.get("state") != "open"]
    alarms = "".join(_alarm(a) for a in open_alarms) or "<p>No open version alarm.</p>"
    cleared = "<h3>Cleared</h3>" + "".join(_alarm(a) for a in closed) if closed else ""
    contradictions = "".join(_contradiction(c) for c in data.contradictions) or "<p>No contradiction.</p>"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        "<title>AgentTwin: agent versions in production</title>"
        f"<style>{CSS}</style></head><body>"
        "<h1>Agent versions in production</h1>"
        f'<section id="alarms"><h2>Version alarms ({len(open_alarms)} open)</h2>{alarms}{cleared}</section>'
        f'<section id="rates"><h2>Rates by version</h2>{_charts(data.windows)}</section>'
        f'<section id="contradictions"><h2>Latest contradictions</h2>{contradictions}</section>'
        "</body></html>\n"
    )
