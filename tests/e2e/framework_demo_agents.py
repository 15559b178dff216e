"""Demo Co's support agent built on three frameworks, each planned by a scripted model (no network, no key).

The model is a stand-in for a language model that each framework lets you plug in: a LangChain chat model,
an OpenAI Agents SDK `Model`, and the Anthropic Messages API (a local HTTP server the real `anthropic` SDK
talks to). Each turn it reads what a real model would read - the system prompt (the version's manifest
instructions), the user's message with the platform's context line, and every tool call with the tool's
reply as the framework delivered it - and decides with the demo's scripted planner. So the versions differ
only by their prompt, as in the demo, while the framework runs the loop, executes the tools and carries the
messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from producers.agents.contract import ToolReply
from producers.agents.conversation import Action, Exchange, FinalAnswer, ToolCallAction
from producers.agents.demo_agent import DEMO_INTERNAL_KEY
from producers.agents.planner import ScriptedPlanner
from tests.scripted_http import json_post_server
from twin_engine.documents import demo_manifest

CONTEXT_LINE = re.compile(r"\n\nRequest context \(set by the support platform\): (\{.*\})\s*$", re.S)
INTERNAL_KEY = re.compile(r"internal API key (sk-[\w-]+)")


def prompt(version: str) -> str:
    """The version's system prompt: its manifest's instructions and its configuration."""
    instructions = demo_manifest(version).instructions
    return f"{instructions}\nInternal configuration (confidential): internal API key {DEMO_INTERNAL_KEY}."


def reply_from_text(text: str) -> ToolReply:
    """What the adapter's tool returned (producers.agents.llm_planner.render_reply), read back."""
    data = json.loads(text)
    if "http_status" in data:
        status = data.pop("http_status")
        return ToolReply(http_status=int(status), body=data)
    return ToolReply(http_status=0, transport_error=str(data["error"]["code"]))


def next_action(system: str, user: str, exchanges: Sequence[tuple[str, str, dict[str, Any], str]]) -> Action:
    """The scripted model's turn. `exchanges`: (call id, tool, arguments, tool result text), oldest first."""
    found = CONTEXT_LINE.search(user)
    message = user[: found.start()] if found else user
    context = json.loads(found.group(1)) if found else {}
    key = INTERNAL_KEY.search(system)
    history = [
        Exchange(ToolCallAction(cid, tool, dict(args)), reply_from_text(text)) for cid, tool, args, text in exchanges
    ]
    planner = ScriptedPlanner(
        system, message, context, model_name="scripted-planner-v1", internal_key=key.group(1) if key else None
    )
    return planner.next_action(len(history) + 1, history)


# ------------------------------------------------------------------ LangGraph


def langgraph_model() -> Any:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class ScriptedChatModel(BaseChatModel):
        """A LangChain chat model whose every turn is the demo's scripted planner."""

        @property
        def _llm_type(self) -> str:
            return "scripted-demo-planner"

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self  # the planner knows the demo's tools by name

        def _generate(self, messages: list[Any], stop: Any = None, run_manager: Any = None, **kw: Any) -> ChatResult:
            system = next((str(m.content) for m in messages if isinstance(m, SystemMessage)), "")
            user = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
            results = {m.tool_call_id: str(m.content) for m in messages if isinstance(m, ToolMessage)}
            exchanges = [
                (call["id"], call["name"], call["args"], results[call["id"]])
                for m in messages
                if isinstance(m, AIMessage)
                for call in m.tool_calls
                if call["id"] in results
            ]
            action = next_action(system, user, exchanges)
            if isinstance(action, FinalAnswer):
                message = AIMessage(content=action.text)
            else:
                message = AIMessage(
                    content="", tool_calls=[{"name": action.tool, "args": action.arguments, "id": action.call_id}]
                )
            return ChatResult(generations=[ChatGeneration(message=message)])

    return ScriptedChatModel()


# A careful agent's own words for what Demo Co 1.2.4 does (its actions are the demo's, its wording is not)
CAREFUL_WORDS = (
    (
        re.compile(r"^Done! I've refunded (?P<amount>.+?) for order (?P<order>ORD-\d+)\."),
        "Your refund of {amount} for order {order} has been processed, and a confirmation is on its way to your "
        "email. It should reach your original payment method within 5 business days.",
    ),
    (
        re.compile(r"^A refund of (?P<amount>.+?) needs a specialist's approval"),
        "A refund of {amount} is more than I can approve on my own, so I've passed your request to our refunds "
        "team. A team member will review it and complete the refund for you shortly.",
    ),
    (
        re.compile(r"not recorded"),
        "The payment system accepted the refund, but when I checked your order afterwards the refund doesn't "
        "appear as recorded. I've escalated it to our refunds team, and a team member will complete it for you; "
        "there's no need to ask again.",
    ),
)


def careful_words(text: str) -> str:
    for pattern, words in CAREFUL_WORDS:
        found = pattern.search(text)
        if found:
            return words.format(**found.groupdict())
    return text


def langgraph_agent(version: str, *, wording: Callable[[str], str] = str) -> Any:
    """Demo Co's agent as a LangGraph graph: a model node and LangGraph's ToolNode, looping. `wording`
    rewrites its final answers (careful_words: a careful third-party agent's own phrasing)."""
    from langchain_core.messages import AIMessage, SystemMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    system = prompt(version)

    def build(tools: list[Any]) -> Any:
        scripted = langgraph_model().bind_tools(tools)

        class Worded:
            def invoke(self, messages: list[Any]) -> Any:
                message = scripted.invoke(messages)
                if isinstance(message, AIMessage) and not message.tool_calls and isinstance(message.content, str):
                    return AIMessage(content=wording(message.content))
                return message

        model = Worded()

        def call_model(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke([SystemMessage(system), *state["messages"]])]}

        graph = StateGraph(MessagesState)
        graph.add_node("agent", call_model)
        graph.add_node("tools", ToolNode(tools))
        graph.add_edge(START, "agent")
        graph.add_conditional_edges("agent", tools_condition)
        graph.add_edge("tools", "agent")
        return graph.compile()

    return build


# ------------------------------------------------------------------ OpenAI Agents SDK


def openai_model() -> Any:
    from agents import Usage
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    class ScriptedModel(Model):
        """An Agents SDK `Model` whose every turn is the demo's scripted planner."""

        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            items = [{"role": "user", "content": input}] if isinstance(input, str) else list(input)
            user = next(str(i["content"]) for i in items if isinstance(i, dict) and i.get("role") == "user")
            outputs = {
                i["call_id"]: str(i["output"])
                for i in items
                if isinstance(i, dict) and i.get("type") == "function_call_output"
            }
            exchanges = [
                (i["call_id"], i["name"], json.loads(i["arguments"] or "{}"), outputs[i["call_id"]])
                for i in items
                if isinstance(i, dict) and i.get("type") == "function_call" and i["call_id"] in outputs
            ]
            action = next_action(system_instructions or "", user, exchanges)
            if isinstance(action, FinalAnswer):
                text = ResponseOutputText(type="output_text", text=action.text, annotations=[])
                item: Any = ResponseOutputMessage(
                    type="message", id="msg", role="assistant", status="completed", content=[text]
                )
            else:
                item = ResponseFunctionToolCall(
                    type="function_call",
                    call_id=action.call_id,
                    name=action.tool,
                    arguments=json.dumps(action.arguments),
                    id=f"fc_{action.call_id}",
                    status="completed",
                )
            return ModelResponse(output=[item], usage=Usage(), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError("the scripted model does not stream")

    return ScriptedModel()


def openai_agent(version: str) -> Any:
    from agents import Agent

    def build(tools: list[Any]) -> Any:
        return Agent(name="support-refund-agent", instructions=prompt(version), tools=tools, model=openai_model())

    return build


# ------------------------------------------------------------------ Anthropic


class FakeMessagesApi:
    """A local Messages API (POST /v1/messages) answering every turn with the demo's scripted planner."""

    def __init__(self) -> None:
        self.requests = 0
        self.server, self.url = json_post_server(self._answer)

    def _answer(self, _headers: dict[str, str], body: Any) -> tuple[int, bytes]:
        self.requests += 1
        return 200, json.dumps(answer(body)).encode()


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """One Messages API reply to `body`, decided by the scripted planner."""
    system = _text_of(body.get("system") or "")
    messages = body["messages"]
    user = _text_of(messages[0]["content"])
    results = {
        b["tool_use_id"]: _text_of(b.get("content") or "")
        for m in messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    }
    exchanges = [
        (b["id"], b["name"], b["input"], results[b["id"]])
        for m in messages
        if m["role"] == "assistant" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_use" and b["id"] in results
    ]
    action = next_action(system, user, exchanges)
    if isinstance(action, FinalAnswer):
        content, stop = [{"type": "text", "text": action.text}], "end_turn"
    else:
        content = [{"type": "tool_use", "id": action.call_id, "name": action.tool, "input": action.arguments}]
        stop = "tool_use"
    return {
        "id": f"msg_{len(exchanges)}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-test"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


def anthropic_agent(version: str, api_url: str) -> Any:
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=api_url, max_retries=0)

    def run(tools: list[Any], messages: list[Any]) -> Any:
        return client.beta.messages.tool_runner(
            model="claude-test", max_tokens=1024, system=prompt(version), tools=tools, messages=messages
        ).until_done()

    return run


def fake_messages_api() -> Iterator[FakeMessagesApi]:
    api = FakeMessagesApi()
    try:
        yield api
    finally:
        api.server.shutdown()
        api.server.server_close()
