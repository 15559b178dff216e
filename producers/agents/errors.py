"""Errors raised while choosing or building an agent (before any case runs)."""

from __future__ import annotations


class AgentSpecError(ValueError):
    """An agent spec (`demo:<version>`, `script:<path>`) or an agent file is unusable. One-line message."""
