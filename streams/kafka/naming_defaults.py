"""The default topic prefix and the wire framings (streams/kafka/naming.py uses them), in a module that imports
nothing: the CLI's parser names them in its flags without loading the event models."""

from __future__ import annotations

from typing import Literal

DEFAULT_PREFIX = "agenttwin."
WireMode = Literal["single-object", "confluent"]
SINGLE_OBJECT_WIRE: WireMode = "single-object"
CONFLUENT_WIRE: WireMode = "confluent"
WIRE_MODES: tuple[str, ...] = (SINGLE_OBJECT_WIRE, CONFLUENT_WIRE)
