"""Serve an agent built on a framework for evaluation, in a few lines (`pip install 'agenttwin[langgraph]'`, …).

Each module (`langgraph`, `openai_agents`, `anthropic`) takes the user's builder, and per case builds the
agent with the twin's tools bound to that case's URL and token, runs it on the case's message, and answers
`POST /run` by the agent contract (schemas/json/agent-run-*.v1.schema.json): `serve(...)` over HTTP, or
`agent(...)` in process for a `python:module:attr` spec. The framework is imported only by its module.
"""
