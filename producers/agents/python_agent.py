"""An in-process agent named by `python:module:attr` (bring your own agent, no HTTP needed).

`attr` (dotted for nested names) may be an object with `run(request)`, a class whose no-argument
instance has one, or a plain callable `(AgentRequest) -> AgentResult`. The module is imported with the
current directory on the import path, so `python:my_agent:agent` finds ./my_agent.py.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from producers.agents.contract import AgentRequest, AgentResult, AgentRunError
from producers.agents.errors import AgentSpecError

_USAGE = "use python:<module>:<attribute>, e.g. python:my_agent:agent"


class PythonAgent:
    """Implements `Agent` around a loaded object; checks that each run really returns an AgentResult."""

    def __init__(self, target: Callable[[AgentRequest], Any], *, name: str, version: str, model_kind: str) -> None:
        self._target = target
        self.name = name
        self.version = version
        self.model_kind = model_kind

    def run(self, request: AgentRequest) -> AgentResult:
        result = self._target(request)
        if not isinstance(result, AgentResult):
            raise AgentRunError("AGENT_ERROR", f"The agent returned {type(result).__name__}, not an AgentResult.")
        return result


def load_python_agent(spec: str) -> PythonAgent:
    """`python:module:attr` (the `python:` prefix is optional) -> an Agent; problems raise AgentSpecError."""
    text = spec.strip().removeprefix("python:")
    module_name, sep, attr_path = text.partition(":")
    if not sep or not module_name.strip() or not attr_path.strip():
        raise AgentSpecError(f"agent spec '{spec}' is incomplete; {_USAGE}")
    module_name, attr_path = module_name.strip(), attr_path.strip()
    if os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # boundary: any failure while importing user code is a spec problem
        reason = f"cannot import '{module_name}': {_one_line(exc)}"
        raise AgentSpecError(f"agent spec '{spec}': {reason}") from None
    target: Any = module
    for part in attr_path.split("."):
        if not hasattr(target, part):
            raise AgentSpecError(f"agent spec '{spec}': '{module_name}' has no attribute '{attr_path}'")
        target = getattr(target, part)
    if inspect.isclass(target):
        try:
            target = target()
        except Exception as exc:  # boundary, as above: the class could not be built without arguments
            reason = f"cannot create {attr_path}(): {_one_line(exc)}"
            raise AgentSpecError(f"agent spec '{spec}': {reason}") from None
    run = getattr(target, "run", None)
    call: Callable[[AgentRequest], Any]
    if callable(run):
        call = run
    elif callable(target):
        call = target
    else:
        raise AgentSpecError(f"agent spec '{spec}': '{attr_path}' is neither callable nor an object with run(request)")
    return PythonAgent(
        call,
        name=str(getattr(target, "name", None) or f"{module_name}:{attr_path}"),
        version=str(getattr(target, "version", None) or "unversioned"),
        model_kind=str(getattr(target, "model_kind", None) or "unknown"),
    )


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
