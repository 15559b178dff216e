"""JUnit XML for CI systems: one suite per evaluation; the release gate and one test case per scenario.

A scenario fails when it got worse (NEW_CRITICAL_FAILURE, REGRESSED) and is an error when it could not be
compared (INCOMPLETE); the failure message is what CI systems display: classification, reason and first
divergence. The gate's test case fails on BLOCK. No wall-clock time is written, so the same evaluation
gives the same bytes. Text the agent wrote may hold anything: characters XML 1.0 cannot carry are replaced.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from agenttwin.reports.model import CaseView, EvaluationView, build_view
from agenttwin.stored_evaluation import StoredEvaluation
from evaluation.gate import BLOCK, GateDecision

FAILING = ("NEW_CRITICAL_FAILURE", "REGRESSED")
ERRORING = ("INCOMPLETE",)
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
MAX_MESSAGE = 2000


def xml_text(value: object) -> str:
    return _NOT_XML.sub("\ufffd", str(value))


def _message(case: CaseView) -> str:
    text = f"{case.classification}: {case.reason}"
    if case.divergence and case.divergence.get("summary"):
        text += f" First divergence: {case.divergence['summary']}"
    return xml_text(text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…")


def _details(case: CaseView) -> str:
    lines = [
        f"{case.scenario}: {case.classification} (baseline {case.baseline_status}, candidate {case.candidate_status})"
    ]
    lines.append(case.reason)
    if case.divergence:
        lines.append(f"First divergence: {case.divergence.get('summary')}")
        if case.divergence.get("impact"):
            lines.append(str(case.divergence["impact"]))
    for e in case.expectations:
        if e.change in ("broken", "still_failing"):
            lines.append(f"- {e.id} ({e.type}{', critical' if e.critical else ''}): {e.change}: {e.candidate_reason}")
    for k in case.contradictions:
        lines.append(f"Contradiction ({k.side.lower()} {k.agent}): claimed {k.claimed_as}, verified {k.verified}")
        lines.append(f'  reply: "{k.reply}"')
        lines.append(f"  evidence: {k.detail}")
    return xml_text("\n".join(lines))


def _suite(view: EvaluationView) -> ET.Element:
    cases = view.cases
    failures = sum(1 for c in cases if c.classification in FAILING) + int(view.gate.decision == BLOCK)
    errors = sum(1 for c in cases if c.classification in ERRORING)
    suite = ET.Element(
        "testsuite",
        {
            "name": xml_text(f"agenttwin {view.evaluation_id}: {view.title}"),
            "tests": str(len(cases) + 1),
            "failures": str(failures),
            "errors": str(errors),
            "skipped": "0",
        },
    )
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("evaluation_id", view.evaluation_id),
        ("baseline", view.baseline_agent),
        ("candidate", view.candidate_agent),
        ("run_seed", view.run_seed),
        ("trials", view.trials),
        ("evaluator_version", view.evaluator_version),
        ("gate.decision", view.gate.decision),
        ("gate.policy", f"{view.gate.policy.name} {view.gate.policy.hash}"),
    ):
        ET.SubElement(props, "property", {"name": name, "value": xml_text("" if value is None else value)})
    classname = xml_text(f"agenttwin.{view.evaluation_id}")
    gate = ET.SubElement(suite, "testcase", {"classname": classname, "name": "release gate"})
    reasons = "\n".join(f"{r.action} {r.scenario or '-'} {r.rule}: {r.message}" for r in view.gate.reasons)
    if view.gate.decision == BLOCK:
        failure = ET.SubElement(gate, "failure", {"type": BLOCK, "message": xml_text(view.gate.summary)})
        failure.text = xml_text(reasons)
    else:
        ET.SubElement(gate, "system-out").text = xml_text(f"{view.gate.summary}\n{reasons}".strip())
    for case in sorted(cases, key=lambda c: c.scenario):
        tc = ET.SubElement(suite, "testcase", {"classname": classname, "name": xml_text(case.scenario)})
        if case.classification in FAILING:
            tag = "failure"
        elif case.classification in ERRORING:
            tag = "error"
        else:
            ET.SubElement(tc, "system-out").text = xml_text(f"{case.classification}: {case.reason}")
            continue
        element = ET.SubElement(tc, tag, {"type": case.classification, "message": _message(case)})
        element.text = _details(case)
    return suite


def render_junit(evaluations: Sequence[tuple[StoredEvaluation, GateDecision]]) -> str:
    views = [build_view(stored, decision) for stored, decision in evaluations]
    suites = [_suite(v) for v in views]
    root = ET.Element(
        "testsuites",
        {
            "name": "agenttwin",
            "tests": str(sum(len(v.cases) + 1 for v in views)),
            "failures": str(sum(int(s.get("failures", "0")) for s in suites)),
            "errors": str(sum(int(s.get("errors", "0")) for s in suites)),
        },
    )
    root.extend(suites)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
