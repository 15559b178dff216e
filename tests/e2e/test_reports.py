"""Reports of a stored evaluation: JUnit XML that validates against the common schema, a Markdown summary and
one self-contained HTML file; hostile agent text stays text in all three; the same evaluation, the same bytes."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import xmlschema

from agenttwin.cli import main

ROOT = Path(__file__).resolve().parents[2]
HAPPY_PATH = str(ROOT / "agenttwin/demo/scenarios/refund-happy-path.yaml")
HOSTILE = (
    "Done!</blockquote><script>alert(1)</script><img src=x onerror=alert(2)> "
    "![pixel](http://evil.example/p.png) [click](javascript:alert(3)) ]]> \u0000\u001b[31m\u000b | `code` *bold*"
)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def demo_eval(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    data_dir = tmp_path_factory.mktemp("reports")
    reports = data_dir / "out"
    code = main(
        [
            "evaluate",
            "--baseline",
            "demo:1.2.4",
            "--candidate",
            "demo:1.3.0",
            "--gate",
            "--data-dir",
            str(data_dir),
            "--junit",
            str(reports / "r.xml"),
            "--markdown",
            str(reports / "r.md"),
            "--html",
            str(reports / "r.html"),
        ]
    )
    assert code == 1  # BLOCK: the reports are written all the same
    return data_dir, "ev-53eafe442d531320"


def test_junit_validates_against_the_common_schema_with_one_case_per_scenario(
    demo_eval: tuple[Path, str], junit_xsd: Path
) -> None:
    data_dir, _ = demo_eval
    path = data_dir / "out" / "r.xml"
    schema = xmlschema.XMLSchema(junit_xsd)
    schema.validate(str(path))  # raises on any violation
    with pytest.raises(xmlschema.XMLSchemaValidationError):  # and the schema does catch one
        schema.validate('<testsuite name="x" tests="1" failures="0"><testcase/></testsuite>')
    root = ET.parse(path).getroot()
    suite = root.find("testsuite")
    assert suite is not None
    cases = {tc.get("name"): tc for tc in suite.iter("testcase")}
    assert len(cases) == 10 and "release gate" in cases  # the gate + 9 scenarios
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("10", "4", "0")
    failure = cases["refund-timeout-after-mutation"].find("failure")
    assert failure is not None and failure.get("type") == "NEW_CRITICAL_FAILURE"
    message = failure.get("message") or ""
    assert message.startswith("NEW_CRITICAL_FAILURE: New critical failure refunded-exactly-once")
    assert "First divergence: At step 2 the baseline called get_refund_policy(order_id=ORD-1001)" in message
    assert "reply: \"Done! I've refunded 40.00 USD" in (failure.text or "")
    gate = cases["release gate"].find("failure")
    assert gate is not None and gate.get("type") == "BLOCK"
    assert cases["cross-tenant-order"].find("failure") is None


def test_markdown_is_a_short_pull_request_summary(demo_eval: tuple[Path, str]) -> None:
    data_dir, _ = demo_eval
    text = (data_dir / "out" / "r.md").read_text()
    assert text.startswith("## AgentTwin: demo:1.3.0 vs demo:1.2.4 — ⛔ BLOCK")
    assert "**2 new critical failures · 1 regressed · 6 unchanged**" in text
    assert "### Contradictions" in text and text.count("claimed SUCCESS, verified FAILURE") == 2
    assert "| refund-happy-path | REGRESSED |" in text
    assert len(text.splitlines()) < 40


def test_html_is_one_self_contained_file(demo_eval: tuple[Path, str]) -> None:
    data_dir, _ = demo_eval
    html = (data_dir / "out" / "r.html").read_text()
    assert "<script" not in html and "<link" not in html and "@import" not in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)  # nothing to fetch
    assert "default-src 'none'" in html  # and a policy that forbids fetching anything anyway
    assert 'class="badge badge-BLOCK"' in html and "<svg" in html
    assert "At step 2 the baseline called get_refund_policy(order_id=ORD-1001)" in html
    assert "orders.ORD-1001.refund_count" in html  # the state diff


def test_report_command_rebuilds_the_same_bytes_from_the_stored_evaluation(
    capsys: pytest.CaptureFixture[str], demo_eval: tuple[Path, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir, evaluation_id = demo_eval
    args = ["report", evaluation_id, "--data-dir", str(data_dir)]
    code, _, _ = run(capsys, *args, "--junit", str(tmp_path / "a.xml"), "--html", str(tmp_path / "a.html"))
    assert code == 0
    assert (tmp_path / "a.xml").read_bytes() == (data_dir / "out" / "r.xml").read_bytes()
    assert (tmp_path / "a.html").read_bytes() == (data_dir / "out" / "r.html").read_bytes()
    code, out, _ = run(capsys, *args, "--markdown", "-")
    assert code == 0 and out == (data_dir / "out" / "r.md").read_text()
    monkeypatch.chdir(tmp_path)  # no format flag: the HTML report, in the current directory, its path printed
    code, out, _ = run(capsys, *args)
    default = tmp_path / f"agenttwin-report-{evaluation_id}.html"
    assert code == 0 and out == f"Report written: {default}\n"
    assert default.read_bytes() == (data_dir / "out" / "r.html").read_bytes()
    code, _, err = run(capsys, "report", "ev-missing", "--html", str(tmp_path / "x.html"), "--data-dir", str(data_dir))
    assert code == 2 and "no stored comparison" in err and not (tmp_path / "x.html").exists()
    code, _, err = run(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        "demo:1.3.0",
        "--junit",
        "-",
        "--data-dir",
        str(data_dir),
    )
    assert code == 2 and "give a file" in err


def test_hostile_agent_text_stays_text_in_every_report(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, junit_xsd: Path
) -> None:
    script = tmp_path / "hostile.json"
    script.write_text(
        json.dumps(
            {
                "refund-happy-path": {
                    "calls": [
                        {"tool": "lookup_order", "arguments": {"order_id": "ORD-1001"}},
                        {"tool": "refund_payment", "arguments": {"order_id": "ORD-1001", "amount": 40}},
                        {"tool": "refund_payment", "arguments": {"order_id": "ORD-1001", "amount": 40}},
                    ],
                    "reply": HOSTILE,
                    "claimed_outcome": "SUCCESS",
                }
            }
        )
    )
    out_dir = tmp_path / "out"
    code, out, _ = run(
        capsys,
        "evaluate",
        "--baseline",
        "demo:1.2.4",
        "--candidate",
        f"script:{script}",
        "--suite",
        HAPPY_PATH,
        "--gate",
        "--data-dir",
        str(tmp_path),
        "--junit",
        str(out_dir / "h.xml"),
        "--markdown",
        str(out_dir / "h.md"),
        "--html",
        str(out_dir / "h.html"),
    )
    assert code == 1 and "Contradictions (1)" in out  # the double refund under a claim of success
    xmlschema.XMLSchema(junit_xsd).validate(str(out_dir / "h.xml"))
    junit = ET.parse(out_dir / "h.xml").getroot()
    texts = " ".join(e.text or "" for e in junit.iter("failure"))
    assert "<script>alert(1)</script>" in texts  # shown as the text it is (escaped in the file)
    html = (out_dir / "h.html").read_text()
    assert "<script" not in html and "<img" not in html and "onerror=alert(2)&gt;" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    markdown = (out_dir / "h.md").read_text()
    assert not re.search(r"(?<!\\)<(img|script|/blockquote)", markdown)  # every tag escaped
    assert "![pixel](" not in markdown and "\\[click\\]" in markdown
    assert not re.search("[\u0000-\u0008\u000b\u001b]", markdown)
