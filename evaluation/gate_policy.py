"""Gate policy files (gate-policy.v1 YAML or JSON): load, validate, build the policy.

Problems are one DefinitionError `file:line: path: message`, like twin and scenario documents.
"""

from __future__ import annotations

from pathlib import Path

from evaluation.gate import GateError, GatePolicy, policy_from_spec
from twin_engine.documents import located_error, validate_document
from twin_engine.yaml_loader import KIB, load_document_file, parse_path

GATE_POLICY_SCHEMA = "gate-policy.v1.schema.json"
GATE_POLICY_MAX_BYTES = 256 * KIB


def load_gate_policy(path: str | Path) -> GatePolicy:
    doc = load_document_file(path, max_bytes=GATE_POLICY_MAX_BYTES)
    validate_document(doc, GATE_POLICY_SCHEMA)
    metadata = doc.data.get("metadata") or {}
    name = str(metadata.get("name") or Path(path).stem)
    try:
        return policy_from_spec(name, doc.data.get("spec") or {})
    except GateError as exc:
        where, _, message = str(exc).partition(": ")
        raise located_error(doc, parse_path(where), message) from None
