"""One room per framework (optional extras): LangGraph/LangChain (`agenttwin[langgraph]`), the OpenAI Agents
SDK (`agenttwin[openai-agents]`) and the Anthropic SDK (`agenttwin[anthropic]`). Each holds both faces:

- `evaluation.py`: serve the agent you already have for evaluation. Per case it is built with the twin's tools
  bound to that case, run on the case's message, and answers `POST /run` by the agent contract:
  `serve(...)`, `server(...)`, or `agent(...)` in process (shared: `_evaluation.py`).
- `production.py`: trace it in production: the framework's tool calls and final answer as AgentTwin spans
  with a claim, the run's trace id and the business subjects it acted on (shared: `_production.py`).

Import your framework's package, e.g. `from agenttwin.integrations.langgraph import serve, langgraph_run`; a
framework is imported only by its own package.
"""
