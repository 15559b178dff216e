"""The airline world: an airline support desk modelled on tau2-bench's airline domain, written in the twin
language (no precomputed tables): users with membership tiers and saved payment methods, reservations with
several passengers and flights, cabin changes with fare differences, baggage allowances by tier,
cancellation rules by time, insurance and cabin, certificates and gift cards.

`agenttwin evaluate --world airline` runs its scenarios with `airline:careful` as the baseline and
`airline:careless` as the candidate unless other agents are named.
"""

from pathlib import Path

AIRLINE_DIR = Path(__file__).resolve().parent
TWIN_FILE = AIRLINE_DIR / "twin.yaml"
SCENARIO_DIR = AIRLINE_DIR / "scenarios"
AGENT_DIR = AIRLINE_DIR / "agents"
AGENT_VERSIONS = ("careful", "careless")

__all__ = ["AGENT_DIR", "AGENT_VERSIONS", "AIRLINE_DIR", "SCENARIO_DIR", "TWIN_FILE"]
