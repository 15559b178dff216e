"""Version policy files (version-policy.v1 YAML or JSON): load, validate, build the VersionPolicy.

Problems are one DefinitionError `file:line: path: message`, like gate policies and twin documents.
"""

from __future__ import annotations

from pathlib import Path

from evaluation.version_watch import VersionPolicy
from twin_engine.documents import validate_document
from twin_engine.yaml_loader import KIB, load_document_file

VERSION_POLICY_SCHEMA = "version-policy.v1.schema.json"
VERSION_POLICY_MAX_BYTES = 64 * KIB
DEFAULT_VERSION_POLICY = Path(__file__).resolve().parent / "policies" / "version-policy.yaml"


def load_version_policy(path: str | Path = DEFAULT_VERSION_POLICY) -> VersionPolicy:
    doc = load_document_file(path, max_bytes=VERSION_POLICY_MAX_BYTES)
    validate_document(doc, VERSION_POLICY_SCHEMA)
    metadata = doc.data.get("metadata") or {}
    spec = doc.data.get("spec") or {}
    default = VersionPolicy()
    return VersionPolicy(
        name=str(metadata.get("name") or Path(path).stem),
        alpha=float(spec.get("alpha", default.alpha)),
        metrics=tuple(spec.get("metrics") or default.metrics),
        min_candidate_traces=int(spec.get("minCandidateTraces", default.min_candidate_traces)),
        min_difference=float(spec.get("minDifference", default.min_difference)),
        clear_after_traces=int(spec.get("clearAfterTraces", default.clear_after_traces)),
    )
