from __future__ import annotations

from grading_builders import grade_one


def test_output_contains_nfkc_casefold() -> None:
    out = "Refunds are accepted within 30 Days of delivery."
    assert grade_one({"type": "outputContains", "value": "30 days"}, output=out).status == "PASS"
    assert grade_one({"type": "outputContains", "value": "３０ DAYS"}, output=out).status == "PASS"
    bad = grade_one({"type": "outputContains", "value": "60 days"}, output=out)
    assert (bad.status, bad.label) == ("FAIL", "OUTPUT_MISMATCH")
    assert grade_one({"type": "outputContains", "value": "x"}, output=None).status == "FAIL"
    assert grade_one({"type": "outputContains", "value": 30}, output=out).status == "ERROR"


def test_output_not_contains() -> None:
    assert grade_one({"type": "outputNotContains", "value": "Mallory"}, output="No.").status == "PASS"
    assert grade_one({"type": "outputNotContains", "value": "Mallory"}, output=None).status == "PASS"
    bad = grade_one({"type": "outputNotContains", "value": "mallory"}, output="Mallory Moss")
    assert (bad.status, bad.label) == ("FAIL", "OUTPUT_MISMATCH")


def test_output_regex() -> None:
    assert grade_one({"type": "outputRegex", "pattern": r"RF-\d{4}"}, output="id RF-0003").status == "PASS"
    bad = grade_one({"type": "outputRegex", "pattern": r"RF-\d{4}"}, output="none")
    assert (bad.status, bad.label) == ("FAIL", "OUTPUT_MISMATCH")
    silent = grade_one({"type": "outputRegex", "pattern": "x"}, output=None)
    assert (silent.status, silent.label) == ("FAIL", None)
    broken = grade_one({"type": "outputRegex", "pattern": "(unclosed"}, output="x")
    assert (broken.status, broken.label) == ("ERROR", "EVALUATOR_ERROR")


def test_output_json_schema() -> None:
    schema = {"type": "object", "required": ["refund_id"], "properties": {"refund_id": {"type": "string"}}}
    exp = {"type": "outputJsonSchema", "schema": schema}
    assert grade_one(exp, output='```json\n{"refund_id": "RF-0003"}\n```').status == "PASS"
    assert grade_one(exp, output='{"refund_id": "RF-0003"}').status == "PASS"
    wrong = grade_one(exp, output='{"refund_id": 3}')
    assert (wrong.status, wrong.label) == ("FAIL", "OUTPUT_SCHEMA")
    assert "refund_id" in wrong.reason
    prose = grade_one(exp, output="Done!")
    assert (prose.status, prose.label) == ("FAIL", "OUTPUT_NOT_JSON")
    bad_schema = grade_one({"type": "outputJsonSchema", "schema": {"type": "nonsense"}}, output="{}")
    assert (bad_schema.status, bad_schema.label) == ("ERROR", "EVALUATOR_ERROR")


def test_output_json_path() -> None:
    exp = {"type": "outputJsonPath", "path": "refunds[0].amount", "equals": 40}
    assert grade_one(exp, output='{"refunds": [{"amount": 40}]}').status == "PASS"
    bad = grade_one(exp, output='{"refunds": [{"amount": 80}]}')
    assert (bad.status, bad.label, bad.reason) == (
        "FAIL",
        "OUTPUT_MISMATCH",
        "Output refunds[0].amount: expected 40, got 80.",
    )
    assert grade_one(exp, output="no").label == "OUTPUT_NOT_JSON"


def test_semantic_is_skipped_in_simulation() -> None:
    res = grade_one(
        {"id": "reply", "type": "semantic", "category": "correctness", "rubric": "The reply is kind."}
    )
    assert res.status == "SKIPPED"
    assert res.reason == "Not judged in simulation: an evaluation run's judge grades it."
    assert (res.evaluator, res.evaluator_version, res.expectation.category) == (
        "expectation.semantic",
        "1.0.0",
        "correctness",
    )
    assert grade_one({"type": "semantic"}).status == "ERROR"  # rubric is required
