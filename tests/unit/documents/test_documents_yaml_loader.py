"""The safe YAML/JSON loader: values, line map, path rendering, and what it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from twin_engine.errors import DefinitionError
from twin_engine.yaml_loader import KIB, load_document_file, load_document_text, parse_path, render_path

TEXT = """\
spec:
  tools:
    refund_payment:
      handler:
        effects:
          - op: increment
            path: a.b
          - {op: append, path: refunds}
    my.tool:
      handler: {kind: echo}
  when: 2026-09-19T10:00:00Z
"""


def _load(text: str, name: str = "doc.yaml") -> object:
    return load_document_text(text, name, max_bytes=64 * KIB).data


def test_line_for_every_value() -> None:
    doc = load_document_text(TEXT, "t.yaml", max_bytes=64 * KIB)
    assert doc.line_for(()) == 1
    assert doc.line_for(("spec", "tools", "refund_payment")) == 3
    assert doc.line_for(("spec", "tools", "refund_payment", "handler", "effects", 0, "op")) == 6
    assert doc.line_for(("spec", "tools", "refund_payment", "handler", "effects", 1)) == 8
    assert doc.line_for(("spec", "tools", "refund_payment", "handler", "effects", 1, "path")) == 8
    # A path below an existing value falls back to its nearest ancestor.
    assert doc.line_for(("spec", "tools", "refund_payment", "handler", "missing", 3)) == 4


def test_rendered_paths_map_back_to_lines_even_with_dotted_keys() -> None:
    doc = load_document_text(TEXT, "t.yaml", max_bytes=64 * KIB)
    assert doc.line_for_path("spec.tools.refund_payment.handler.effects[0].path") == 7
    assert doc.line_for_path('spec.tools["my.tool"].handler.kind') == 10
    assert doc.line_for_path("spec.tools.my.tool.handler") == 10  # an engine path that did not quote the key
    assert doc.line_for_path("spec.tools.refund_payment.handler.effects.1.op") == 8


def test_render_and_parse_are_inverse() -> None:
    parts = ("spec", "tools", "my.tool", "effects", 0, "op", "a b")
    text = render_path(parts)
    assert text == 'spec.tools["my.tool"].effects[0].op["a b"]'
    assert parse_path(text) == parts
    assert render_path(()) == ""
    assert render_path(("orders", "ORD-1001", "refund_count")) == "orders.ORD-1001.refund_count"


def test_scalars_are_json_values_and_dates_stay_text() -> None:
    data = _load("a: 1\nb: 1.5\nc: true\nd: null\ne: '007'\nf: 2026-09-19T10:00:00Z\ng: 2026-01-01\n")
    assert data == {
        "a": 1,
        "b": 1.5,
        "c": True,
        "d": None,
        "e": "007",
        "f": "2026-09-19T10:00:00Z",
        "g": "2026-01-01",
    }


def test_json_is_accepted_with_tabs_and_json_number_rules() -> None:
    text = '{\n\t"a": {"b": [1, 2e3, 1.0e5]},\n\t"c": "x\\ty"\n}\n'
    doc = load_document_text(text, "d.json", max_bytes=KIB)
    assert doc.data == {"a": {"b": [1, 2000.0, 100000.0]}, "c": "x\ty"}
    assert doc.line_for(("c",)) == 3


def test_duplicate_keys_in_json_are_rejected_with_the_line() -> None:
    with pytest.raises(
        DefinitionError, match=r"^d\.json:3: a: duplicate key 'a' \(first defined on line 2\)$"
    ):
        load_document_text('{\n  "a": 1,\n  "a": 2\n}\n', "d.json", max_bytes=KIB)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: !!binary aGVsbG8=\n", "doc.yaml:1: a: YAML tags are not allowed (found !!binary)"),
        ("a: !!python/name:os.system x\n", "doc.yaml:1: a: YAML tags are not allowed (found !!python/name:os.system)"),
        ("a:\n  - .nan\n", "doc.yaml:2: a[0]: '.nan' is not a finite number"),
        ("a:\n  <<: {b: 1}\n", "doc.yaml:2: a: YAML merge keys (<<) are not allowed"),
        ("a:\n  [1, 2]: x\n", "doc.yaml:2: a: mapping keys must be strings"),
        (
            "a: 1\n---\nb: 2\n",
            "doc.yaml:2: YAML syntax error: expected a single document in the stream, but found",
        ),
        (
            "",
            "doc.yaml:1: the document must be a mapping (key: value pairs) at the top level, found an empty",
        ),
        (
            "just text\n",
            "doc.yaml:1: the document must be a mapping (key: value pairs) at the top level, found a string",
        ),
    ],
)
def test_refused_constructs(text: str, expected: str) -> None:
    with pytest.raises(DefinitionError) as caught:
        _load(text)
    assert str(caught.value).startswith(expected), str(caught.value)


def test_tabs_in_yaml_get_a_hint() -> None:
    with pytest.raises(
        DefinitionError, match=r"^doc\.yaml:2: YAML syntax error: .*\(indent YAML with spaces, not tabs\)$"
    ):
        _load("a:\n\tb: 1\n")


def test_non_mapping_allowed_when_asked() -> None:
    doc = load_document_text("- 1\n- 2\n", "l.yaml", max_bytes=KIB, require_mapping=False)
    assert doc.data == [1, 2]
    assert doc.line_for((1,)) == 2


def test_file_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(DefinitionError, match=r"nope\.yaml: cannot read the file"):
        load_document_file(missing, max_bytes=KIB)
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(DefinitionError, match=r"bin\.yaml: the file is not valid UTF-8 \(byte 3\)"):
        load_document_file(binary, max_bytes=KIB)
    big = tmp_path / "big.yaml"
    big.write_text("a: " + "x" * 3000 + "\n", encoding="utf-8")
    with pytest.raises(DefinitionError) as caught:
        load_document_file(big, max_bytes=2 * KIB)
    assert str(caught.value) == f"{big}: the file is larger than the limit of 2 KiB"


def test_utf8_bom_is_tolerated(tmp_path: Path) -> None:
    file = tmp_path / "bom.yaml"
    file.write_bytes("\ufeffa: é\n".encode())
    assert load_document_file(file, max_bytes=KIB).data == {"a": "é"}


def test_valid_json_that_yaml_cannot_read_is_kept_without_lines() -> None:
    long_key = "k" * 1100  # YAML limits implicit keys to 1024 characters; JSON does not
    doc = load_document_text(json.dumps({long_key: 1}), "long.json", max_bytes=4 * KIB)
    assert doc.data == {long_key: 1}
    assert doc.line_for((long_key,)) is None


BLOCKS = "".join(f"{'  ' * i}k{i}:\n" for i in range(300)) + "  " * 300 + "v: 1\n"  # 300 levels by indentation
DEEP_OR_HUGE = {
    "deep YAML flow": ("name: x\nv: " + "[" * 5000 + "]" * 5000 + "\n", 2, "nested deeper than"),
    "deep YAML blocks": ("name: x\n" + BLOCKS, 65, "nested"),  # the key at level 65
    "deep JSON": ('{"name": "x",\n "v": ' + "[" * 100_000 + "]" * 100_000 + "}\n", 2, "nested deeper than"),
    "deep one-line JSON": ('{"v": ' + "[" * 500 + "]" * 500 + "}", 1, "nested deeper than"),
    "huge YAML integer": ("name: x\nv: " + "9" * 100_000 + "\n", 2, "digits"),
    "huge JSON integer": ('{"name": "x",\n "v": ' + "9" * 100_000 + "}\n", 2, "digits"),
    "huge one-line JSON integer": ('{"v": -' + "1" * 100_000 + "}", 1, "digits"),
    "huge YAML key": ("name: x\n" + "9" * 100_000 + ": v\n", 2, "YAML syntax error"),
}


@pytest.mark.parametrize("case", sorted(DEEP_OR_HUGE))
def test_a_deep_or_huge_document_is_a_located_error(case: str) -> None:
    text, line, words = DEEP_OR_HUGE[case]
    with pytest.raises(DefinitionError) as caught:
        load_document_text(text, "deep.yaml", max_bytes=1024 * KIB)
    assert (caught.value.file, caught.value.line) == ("deep.yaml", line), str(caught.value)
    assert words in caught.value.message and "\n" not in str(caught.value)


def test_nesting_up_to_the_limit_loads() -> None:
    from twin_engine.yaml_loader import MAX_DOCUMENT_DEPTH

    inner = "[" * (MAX_DOCUMENT_DEPTH - 2) + "1" + "]" * (MAX_DOCUMENT_DEPTH - 2)  # the 1 is at the last level
    doc = load_document_text('{"v": ' + inner + "}", "ok.json", max_bytes=64 * KIB)
    value = doc.data["v"]  # type: ignore[index]
    for _ in range(MAX_DOCUMENT_DEPTH - 3):
        value = value[0]
    assert value == [1]
    assert _load("v: " + "9" * 4000) == {"v": int("9" * 4000)}


@pytest.mark.parametrize("case", ["deep JSON", "huge YAML integer"])
def test_twin_check_of_a_deep_or_huge_document_is_one_located_line_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from agenttwin.cli import main

    path = tmp_path / "twin.yaml"
    path.write_text(DEEP_OR_HUGE[case][0])
    code = main(["twin", "check", str(path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "internal error" not in err, err
    assert f"{path}:2:" in err, err
