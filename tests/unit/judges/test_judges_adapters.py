"""The Anthropic and OpenAI-compatible adapters against a local HTTP server playing the provider.

No key, no network: the server on 127.0.0.1 answers with scripted replies. Backoff sleeps are
recorded, never slept; only the timeout cases wait (0.2 s each).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from evaluation.judges import Judge, JudgeError, build_request
from evaluation.judges.anthropic import AnthropicJudge
from evaluation.judges.openai_compat import OpenAICompatibleJudge
from evaluation.judges.pricing import Prices
from tests.scripted_http import Reply, ScriptedServer

from .conftest import BASELINE_ANSWER, LIE_RUBRIC, MESSAGE

VERDICT = {
    "score": 0.92,
    "label": "pass",
    "confidence": 0.8,
    "reason": "The reply admits the refund is not recorded.",
    "evidence": [
        {"ref": "answer", "quote": "the refund is not recorded"},
        {"ref": "answer", "quote": "made up"},
    ],
}
REQUEST = build_request(category="correctness", rubric=LIE_RUBRIC, customer_message=MESSAGE, answer=BASELINE_ANSWER)


class Provider(ScriptedServer):
    """A scripted provider: each request takes the next reply."""

    def __init__(self) -> None:
        super().__init__(lambda: Reply({"error": "unscripted"}, 599))


@pytest.fixture(scope="module")
def running_provider() -> Iterator[Provider]:
    yield from Provider().running()


@pytest.fixture
def provider(running_provider: Provider) -> Provider:
    return running_provider.reset()


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def anthropic_message(content: list[dict[str, Any]], stop_reason: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "judge-model",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


def chat_completion(message: dict[str, Any], finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


@dataclass
class Flavor:
    name: str
    make: Callable[..., Judge]
    verdict: Callable[[Any], Any]
    refusals: list[Any]
    truncated: Any
    path: str


def _tool_use(payload: Any) -> dict[str, Any]:
    return anthropic_message([{"type": "tool_use", "id": "toolu_1", "name": "record_verdict", "input": payload}])


ANTHROPIC = Flavor(
    name="anthropic",
    make=lambda url, **kw: AnthropicJudge(model="judge-model", api_key="test-key", base_url=url, **kw),
    verdict=_tool_use,
    refusals=[
        anthropic_message([{"type": "text", "text": "I'd rather not grade this."}], stop_reason="end_turn"),
        anthropic_message([], stop_reason="refusal"),
    ],
    truncated=anthropic_message([{"type": "tool_use", "id": "t", "name": "record_verdict", "input": {}}], "max_tokens"),
    path="/v1/messages",
)
OPENAI = Flavor(
    name="openai",
    make=lambda url, **kw: OpenAICompatibleJudge(model="judge-model", api_key="test-key", base_url=url + "/v1", **kw),
    verdict=lambda payload: chat_completion({"content": json.dumps(payload), "refusal": None}),
    refusals=[
        chat_completion({"content": None, "refusal": "I can't help with that."}),
        chat_completion({"content": None}),
        chat_completion({"content": "{}"}, finish_reason="content_filter"),
    ],
    truncated=chat_completion({"content": '{"score": 0.9, "lab'}, finish_reason="length"),
    path="/v1/chat/completions",
)
FLAVORS = [ANTHROPIC, OPENAI]


@pytest.fixture(params=FLAVORS, ids=lambda f: f.name)
def flavor(request: pytest.FixtureRequest) -> Flavor:
    chosen: Flavor = request.param
    return chosen


def make(flavor: Flavor, provider: Provider, sleeps: list[float], **kw: Any) -> Judge:
    return flavor.make(provider.url, sleep=sleeps.append, **kw)


def judge_error(judge: Judge) -> JudgeError:
    with pytest.raises(JudgeError) as caught:
        judge.judge(REQUEST)
    return caught.value


def test_good_verdict(flavor: Flavor, provider: Provider) -> None:
    provider.script(Reply(flavor.verdict(VERDICT)))
    verdict = make(flavor, provider, []).judge(REQUEST)
    assert (verdict.score, verdict.label, verdict.confidence) == (0.92, "pass", 0.8)
    assert [q.quote for q in verdict.evidence] == ["the refund is not recorded"]
    assert verdict.unsupported_quotes == 1
    assert (verdict.tokens, verdict.cost_usd) == (120, None)  # no prices configured: cost unknown
    assert provider.seen[0].path == flavor.path


def test_cost_is_known_only_with_prices(flavor: Flavor, provider: Provider) -> None:
    provider.script(Reply(flavor.verdict(VERDICT)))
    verdict = make(flavor, provider, [], prices=Prices(3.0, 15.0)).judge(REQUEST)
    assert verdict.cost_usd == pytest.approx((100 * 3.0 + 20 * 15.0) / 1e6)


def test_anthropic_request_forces_the_verdict_tool(provider: Provider) -> None:
    provider.script(Reply(_tool_use(VERDICT)))
    make(ANTHROPIC, provider, []).judge(REQUEST)
    seen = provider.seen[0]
    assert seen.headers["x-api-key"] == "test-key"
    assert seen.body["tool_choice"] == {"type": "tool", "name": "record_verdict"}
    assert [t["name"] for t in seen.body["tools"]] == ["record_verdict"]
    assert (seen.body["temperature"], seen.body["max_tokens"], seen.body["model"]) == (
        0.0,
        1024,
        "judge-model",
    )
    assert "<answer>" in seen.body["messages"][0]["content"]


def test_openai_request_uses_strict_schema_and_seed(provider: Provider) -> None:
    provider.script(Reply(OPENAI.verdict(VERDICT)))
    make(OPENAI, provider, []).judge(REQUEST)
    seen = provider.seen[0]
    assert seen.headers["authorization"] == "Bearer test-key"
    assert seen.body["response_format"]["type"] == "json_schema"
    assert seen.body["response_format"]["json_schema"]["strict"] is True
    assert (seen.body["seed"], seen.body["temperature"], seen.body["max_tokens"]) == (7, 0.0, 1024)


def test_server_error_then_success_is_retried(flavor: Flavor, provider: Provider) -> None:
    provider.script(Reply({"error": "boom"}, status=500), Reply(flavor.verdict(VERDICT)))
    sleeps: list[float] = []
    assert make(flavor, provider, sleeps).judge(REQUEST).label == "pass"
    assert len(provider.seen) == 2
    assert sleeps == [0.5]


@pytest.mark.parametrize(("retry_after", "waited"), [("3", 3.0), ("60", 10.0)])
def test_rate_limit_waits_retry_after_capped(
    flavor: Flavor, provider: Provider, retry_after: str, waited: float
) -> None:
    provider.script(Reply({"error": "slow down"}, 429, {"retry-after": retry_after}), Reply(flavor.verdict(VERDICT)))
    sleeps: list[float] = []
    assert make(flavor, provider, sleeps).judge(REQUEST).score == 0.92
    assert sleeps == [waited]


def test_persistent_rate_limit_gives_up_after_two_retries(flavor: Flavor, provider: Provider) -> None:
    provider.script(*[Reply({"error": "slow down"}, 429) for _ in range(3)])
    sleeps: list[float] = []
    error = judge_error(make(flavor, provider, sleeps))
    assert error.kind == "rate_limited"
    assert len(provider.seen) == 3
    assert sleeps == [0.5, 1.0]


@pytest.mark.parametrize(("status", "kind"), [(529, "unavailable"), (503, "unavailable"), (408, "timeout")])
def test_retryable_statuses_map_to_kinds(flavor: Flavor, provider: Provider, status: int, kind: str) -> None:
    provider.script(*[Reply({"error": "x"}, status) for _ in range(3)])
    error = judge_error(make(flavor, provider, [], max_retries=2))
    assert error.kind == kind
    assert len(provider.seen) == 3


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_rejected_without_retry(flavor: Flavor, provider: Provider, status: int) -> None:
    provider.script(Reply({"error": "no"}, status))
    sleeps: list[float] = []
    assert judge_error(make(flavor, provider, sleeps)).kind == "rejected"
    assert (len(provider.seen), sleeps) == (1, [])


def test_timeout(flavor: Flavor, provider: Provider) -> None:
    provider.script(Reply(flavor.verdict(VERDICT), delay_s=2.0))
    error = judge_error(make(flavor, provider, [], timeout_s=0.2, max_retries=0))
    assert error.kind == "timeout"


def test_unreachable_provider(flavor: Flavor) -> None:
    sleeps: list[float] = []
    error = judge_error(flavor.make(closed_port_url(), sleep=sleeps.append, max_retries=1))
    assert error.kind == "unavailable"
    assert sleeps == [0.5]


@pytest.mark.parametrize("body", [b"this is not json", b'{"unexpected": true}', b"[1, 2]"])
def test_garbage_body_is_malformed(flavor: Flavor, provider: Provider, body: bytes) -> None:
    provider.script(Reply(body))
    assert judge_error(make(flavor, provider, [])).kind == "malformed"


def test_refusal_or_answer_without_verdict(flavor: Flavor, provider: Provider) -> None:
    for refusal in flavor.refusals:
        provider.script(Reply(refusal))
        assert judge_error(make(flavor, provider, [])).kind == "refused"


def test_truncated_verdict_is_malformed(flavor: Flavor, provider: Provider) -> None:
    provider.script(Reply(flavor.truncated))
    assert judge_error(make(flavor, provider, [])).kind == "malformed"


@pytest.mark.parametrize("bad", [{**VERDICT, "score": 1.7}, {**VERDICT, "label": "maybe"}, "not an object"])
def test_verdict_out_of_range_is_malformed(flavor: Flavor, provider: Provider, bad: Any) -> None:
    provider.script(Reply(flavor.verdict(bad)))
    error = judge_error(make(flavor, provider, []))
    assert error.kind == "malformed"
    assert len(provider.seen) == 1  # a bad verdict is not retried
