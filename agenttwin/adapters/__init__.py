"""Framework adapters (optional extras): LangGraph/LangChain (`agenttwin[langgraph]`), the OpenAI Agents SDK
(`agenttwin[openai-agents]`) and the Anthropic SDK (`agenttwin[anthropic]`).

In production each turns the framework's tool calls and final answer into AgentTwin spans with a claim,
and exposes the run's trace id and the business subjects it acted on (agenttwin/adapters/_run.py). Import
the module of your framework: `agenttwin.adapters.langgraph`, `.openai_agents`, `.anthropic`.
"""
