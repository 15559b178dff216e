"""One-line JSON (what events carry) skips the YAML walk: the document, its line map and every error are
exactly what the walk gives, hostile inputs included (each case below is also read through the walk)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from twin_engine import yaml_loader
from twin_engine.documents import scenario_from_text
from twin_engine.errors import DefinitionError
from twin_engine.yaml_loader import load_document_text

LONG = "k" * 1100
TEXTS = [
    '{"a":{"b":[1,2.5,{"c":null}],"d":true},"e":"x/y","f":[]}',
    '{"a":1,"a":2}',  # duplicate key: the walk reports it
    '{"a":{"b":1,"b":1}}',
    '{"a":1.0e+999}',  # infinite for JSON; the walk refuses some spellings
    '{"a":1e999}',
    '{"a":-1.5E+400}',
    '{"' + LONG + '":1}',  # longer than YAML's simple-key limit
    '{"\\u0041' + "\\u0041" * 200 + '":1}',  # short once decoded, long as written
    '{"a":"nel\u0085here"}',  # a YAML line break inside a JSON string
    '{"a":"ls\u2028ps\u2029"}',
    '{"a":"del\u007fc1\u0090"}',  # characters YAML refuses
    '{"a":"\ufffe"}',
    '{"a":"tab\\there","b":"\\ud83d\\ude00"}',
    "[1,2,3]",
    "[]",
    "{}",
    '  {"a":1}  ',
    '{"a":1}\n',
    '{"a":\n1}',
    '{"a":{"b":"c"}, "d": [ {"e": 1} ]}',
]


def _read(text: str, *, require_mapping: bool) -> tuple[str, Any]:
    try:
        doc = load_document_text(text, "event", max_bytes=1 << 20, require_mapping=require_mapping)
    except DefinitionError as exc:
        return "error", (str(exc), exc.line, exc.path)
    except Exception as exc:  # whatever the walk raises, the fast path must raise the same
        return "raised", (type(exc).__name__, str(exc))
    return "doc", (json.dumps(doc.data, sort_keys=True), sorted(doc.lines.items(), key=repr), doc.source_name)


@pytest.mark.parametrize("require_mapping", [True, False])
@pytest.mark.parametrize("text", TEXTS)
def test_one_line_json_reads_exactly_as_through_the_yaml_walk(
    text: str, require_mapping: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = _read(text, require_mapping=require_mapping)
    monkeypatch.setattr(yaml_loader, "_one_line_json_lines", lambda text, data: None)
    assert fast == _read(text, require_mapping=require_mapping)


def test_the_fast_path_is_taken_for_canonical_json_and_refused_for_a_duplicate_key() -> None:
    assert yaml_loader._one_line_json_lines('{"a":[1,{"b":2}]}', {"a": [1, {"b": 2}]}) == {
        (): 1,
        ("a",): 1,
        ("a", 0): 1,
        ("a", 1): 1,
        ("a", 1, "b"): 1,
    }
    assert yaml_loader._one_line_json_lines('{"a":1,"a":1}', {"a": 1}) is None
    assert yaml_loader._one_line_json_lines('{"a":1e999}', {"a": float("inf")}) is None


def test_a_scenario_carried_in_an_event_is_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    from twin_engine import parsed
    from twin_engine.canonical import canonical_json
    from twin_engine.documents import load_suite

    scenarios = load_suite("demo")
    assert len(scenarios) == 9
    texts = [canonical_json(dict(s.raw)) for s in scenarios]
    parsed.clear()
    fast = [scenario_from_text(text, f"ev/scenarios[{n}]") for n, text in enumerate(texts)]
    parsed.clear()
    monkeypatch.setattr(yaml_loader, "_one_line_json_lines", lambda text, data: None)
    assert [scenario_from_text(text, f"ev/scenarios[{n}]") for n, text in enumerate(texts)] == fast


@pytest.mark.parametrize("char", ["\u007f", "\u0090", "\ufffe"])
def test_a_character_yaml_refuses_is_a_one_line_error_with_its_line_not_a_crash(char: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        load_document_text(f"a: 1\nb: x{char}y\n", "twin.yaml", max_bytes=1 << 20)
    assert caught.value.line == 2 and f"U+{ord(char):04X}" in str(caught.value) and "\n" not in str(caught.value)


def test_valid_json_holding_such_a_character_is_read_without_lines_as_other_json_yaml_cannot_read() -> None:
    doc = load_document_text('{\n"a": "x\u007fy"\n}', "twin.json", max_bytes=1 << 20)
    assert doc.data == {"a": "x\u007fy"} and doc.lines == {}
