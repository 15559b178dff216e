"""One budget per twin call (twin_engine/budget.py): loops, conversions and allocations count, sizes are
checked before the memory is taken, and a call over it is a recorded twin error while the case goes on."""

from __future__ import annotations

import textwrap
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from twin_engine import Twin
from twin_engine.canonical import canonical_json
from twin_engine.case import new_case
from twin_engine.documents import load_twin
from twin_engine.errors import DefinitionError

LISTS = {
    "type": "object",
    "properties": {"a": {"type": "array", "items": {"type": "string"}}, "b": {"type": "array"}, "s": {}, "t": {}},
}


def _twin(handler: dict[str, Any], initial: dict[str, Any] | None = None) -> Twin:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "budget"},
        "spec": {
            "initialState": initial or {"pairs": {}, "log": [], "n": 0},
            "tools": {"t": {"inputSchema": LISTS, "handler": handler}, "ping": {"handler": {"kind": "static"}}},
        },
    }
    return Twin.from_definition(doc)


def _ids(count: int, width: int = 8) -> list[str]:
    return [f"{i:0{width}d}" for i in range(count)]


PAIRWISE = {  # the ordinary pairwise forEach: effects only, no expression in the loop bodies
    "kind": "mutate",
    "effects": [
        {
            "forEach": "args.a",
            "as": "x",
            "index": "i",
            "effects": [
                {
                    "forEach": "args.b",
                    "as": "y",
                    "index": "j",
                    "effects": [{"op": "set", "path": "pairs.{vars.x}", "value": "{vars.y}"}],
                }
            ],
        }
    ],
}


def _refused(reply: Any) -> None:
    assert (reply.http_status, reply.record.status) == (500, "error")
    assert reply.record.error_code == "TWIN_BUDGET_EXCEEDED", reply.body
    assert reply.record.mutated is False and reply.record.changes == ()


def test_nested_loops_multiply_and_a_loop_without_expressions_still_spends() -> None:
    twin = _twin(PAIRWISE)
    case = new_case(twin)
    before = case.state_hash()
    reply = case.call("t", {"a": _ids(400), "b": _ids(400)})  # 160,000 iterations: over 100,000 steps
    _refused(reply)
    assert "100,000 steps" in reply.body["error"]["message"]
    assert case.state_hash() == before  # all-or-nothing: nothing of the refused call stays
    assert case.call("ping", {}).http_status == 200  # the case goes on
    ok = case.call("t", {"a": _ids(20), "b": _ids(20)})  # 400 iterations: well within
    assert ok.http_status == 200


def test_a_refused_call_is_the_same_record_every_time() -> None:
    records = []
    for _ in range(2):
        case = new_case(_twin(PAIRWISE), seed=3)
        case.call("t", {"a": _ids(400), "b": _ids(400)})
        records.append(canonical_json([r.to_dict() for r in case.records]))
    assert records[0] == records[1]  # counted, not timed: byte for byte


def test_many_appends_of_an_argument_go_over_the_bytes_not_into_a_huge_record() -> None:
    append = {"op": "append", "path": "log", "value": {"$expr": "args.a"}}
    twin = _twin({"kind": "mutate", "effects": [{"forEach": "args.a", "effects": [append]}]})
    case = new_case(twin)
    reply = case.call("t", {"a": _ids(1000, 20)})  # each append ~25 KB, 1000 of them: ~25 MB of record
    _refused(reply)
    assert "MiB allocated" in reply.body["error"]["message"]
    assert len(canonical_json(reply.record.to_dict())) < 1 << 20


def _peak_bytes(call: Any) -> int:
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("expression", "args"),
    [
        # a text repeated by building: 2,000 copies of a 50 KB text joined (100 MB), refused before joining
        ("args.a.map(x, args.s).join('')", {"a": _ids(2000), "s": "x" * 50_000}),
        # replace grows a text by len(new) per match: 20,000 x 20,000 characters
        ("size(args.s.replace('a', args.t))", {"s": "a" * 20_000, "t": "b" * 20_000}),
        # one list shared 2,000 times: 2,000 x 2,000 ids of JSON, refused while sizing, not after converting
        ("args.a.map(x, args.a)", {"a": _ids(2000)}),
        # concatenation in a comprehension: each element a new 100 KB text
        ("args.a.map(x, args.s + args.s)", {"a": _ids(2000), "s": "y" * 50_000}),
    ],
)
def test_sizes_are_checked_before_the_memory_is_taken(expression: str, args: dict[str, Any]) -> None:
    twin = _twin({"kind": "static", "response": {"v": {"$expr": expression}}})
    case = new_case(twin)
    replies: list[Any] = []
    peak = _peak_bytes(lambda: replies.append(case.call("t", args)))
    reply = replies[0]
    assert reply.http_status == 500
    assert reply.record.error_code in ("TWIN_BUDGET_EXCEEDED", "TWIN_EXPRESSION_LIMIT"), reply.body
    assert peak < 32 << 20, f"peak {peak >> 20} MiB"  # the arguments themselves are ~0.1-2 MiB


def test_a_find_over_a_large_state_spends_per_entry() -> None:
    state = {"items": {f"k{i:06d}": {"v": i} for i in range(30_000)}}
    twin = _twin({"kind": "read", "find": {"in": "state.items", "where": "item.v < 0"}}, initial=state)
    reply = new_case(twin).call("t", {})
    _refused(reply)


CEL_DEEP = "(" * 900 + "1" + ")" * 900


def _deep_twin_file(tmp_path: Path, expression: str) -> Path:
    path = tmp_path / "deep.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            apiVersion: agenttwin.dev/v1
            kind: TwinDefinition
            metadata: {{name: deep}}
            spec:
              initialState: {{}}
              tools:
                t:
                  handler:
                    kind: static
                    response: {{n: {{$expr: "{expression}"}}}}
            """
        ),
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("expression", [CEL_DEEP, "[" * 300 + "1" + "]" * 300, "-" * 900 + "1"])
def test_an_expression_nested_too_deep_is_a_located_error(tmp_path: Path, expression: str) -> None:
    path = _deep_twin_file(tmp_path, expression)
    with pytest.raises(DefinitionError) as info:
        load_twin(path)
    text = str(info.value)
    assert text.startswith(f"{path}:10: spec.tools.t.handler.response.n.$expr:"), text
    assert "nested" in text


def test_twin_check_reports_deep_nesting_with_its_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _deep_twin_file(tmp_path, CEL_DEEP)
    assert main(["twin", "check", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}:10:" in err and "internal error" not in err


def test_twin_check_states_the_bound_of_nested_loops(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pairs.yaml"
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "pairs"},
        "spec": {"initialState": {"pairs": {}}, "tools": {"t": {"inputSchema": LISTS, "handler": PAIRWISE}}},
    }
    path.write_text(canonical_json(doc), encoding="utf-8")
    assert main(["twin", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert "forEach nested 2 deep: up to 1,000^2 = 1,000,000 iterations" in out
    assert "budget of 100,000 steps" in out


def test_twin_check_states_the_bound_of_nested_comprehensions() -> None:
    nested = _twin({"kind": "static", "response": {"n": {"$expr": "size(args.a.map(x, args.a.map(y, y)))"}}})
    chained = _twin({"kind": "static", "response": {"n": {"$expr": "size(args.a.map(x, x).filter(y, y != ''))"}}})
    assert nested.warnings() == (
        (
            "spec.tools.t.handler.response.n.$expr",
            "comprehensions nested 2 deep: up to 10,000^2 element visits when the lists are long; a call stops at "
            "its budget of 100,000 steps (500 TWIN_BUDGET_EXCEEDED, recorded)",
        ),
    )
    assert chained.warnings() == ()  # one after the other: they add up, they do not multiply
