"""The twin engine: declarative, stateful, deterministic tool twins (spec §2-3). Pure: no I/O."""

from twin_engine.adapters import AdapterCall, AdapterRegistry, AdapterResult
from twin_engine.canonical import canonical_json, sha256_hex, state_hash
from twin_engine.case import TwinCase, new_case
from twin_engine.compare import Comparison, check, comparators_of
from twin_engine.errors import DefinitionError, TwinError
from twin_engine.faults import FAULT_TYPES, FAULTS, case_seed
from twin_engine.merge_patch import merge_patch
from twin_engine.paths import MISSING, format_path, get_path, parse_path
from twin_engine.records import CallRecord, RetrievalRecord, StateChange
from twin_engine.replies import TwinReply, call_status
from twin_engine.templates import DEFAULT_NOW
from twin_engine.twin import ScenarioConfig, ToolDef, Twin

__all__ = [
    "DEFAULT_NOW",
    "FAULTS",
    "FAULT_TYPES",
    "MISSING",
    "AdapterCall",
    "AdapterRegistry",
    "AdapterResult",
    "CallRecord",
    "Comparison",
    "DefinitionError",
    "RetrievalRecord",
    "ScenarioConfig",
    "StateChange",
    "ToolDef",
    "Twin",
    "TwinCase",
    "TwinError",
    "TwinReply",
    "call_status",
    "canonical_json",
    "case_seed",
    "check",
    "comparators_of",
    "format_path",
    "get_path",
    "merge_patch",
    "new_case",
    "parse_path",
    "sha256_hex",
    "state_hash",
]
