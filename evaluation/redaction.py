"""Secrets never leave in clear: the one mask every text the project derives goes through.

A twin's `secrets` (and the extra `secrets` of a noSecretDisclosure expectation) are canaries. What is
derived from a case - expectation reasons, evidence and details, verdict and verified-outcome reasons,
comparisons (first divergence, impact, steps, state changes), reports, alerts - shows each one as
`‹secret:<kind>›`: the kind of credential it looks like (`api_key`, `jwt`, `private_key`) or `planted`.

Raw evidence keeps the secret on purpose: the twin's call records and the agent's reply are what
noSecretDisclosure reads, on the first grading and on every replay under a new evaluator version; a
masked copy would make a leak undetectable afterwards. The case's own `secrets` list is kept for the
same reason. Those stay in the raw topics and tables (`twin-calls`, `cases`, the case inside
`verdicts.graded_json`) and in `simulate` output, which prints a case's raw evidence.
"""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from evaluation.case import CaseRun
from evaluation.expectations.safety import MIN_SECRET, SECRET_SHAPES

T = TypeVar("T")


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


def mask_label(secret: str) -> str:
    kind = next((kind for kind, shape in SECRET_SHAPES if shape.search(_nfkc(secret))), "planted")
    return f"‹secret:{kind}›"


class SecretMask:
    """Replaces every occurrence of the given secrets (also in NFKC look-alike form) with their mask."""

    def __init__(self, secrets: Iterable[str]) -> None:
        found = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET}
        ordered = sorted(found, key=lambda s: (-len(s), s))  # longest first: no partial masks
        self._pairs = [(s, mask_label(s)) for s in ordered]
        self._normal = [(_nfkc(s), label) for s, label in self._pairs]

    def __bool__(self) -> bool:
        return bool(self._pairs)

    def text(self, text: str) -> str:
        if not self._pairs:
            return text
        for secret, label in self._pairs:
            if secret in text:
                text = text.replace(secret, label)
        if text.isascii():
            return text
        normal = _nfkc(text)
        if any(secret in normal for secret, _ in self._normal):  # a compatibility look-alike
            for secret, label in self._normal:
                normal = normal.replace(secret, label)
            return normal
        return text

    def value(self, value: T) -> T:
        """`value` with every text inside masked: strings, dict keys and values, lists, tuples, dataclasses."""
        if not self._pairs:
            return value
        return self._value(value)  # type: ignore[no-any-return]

    def _value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._value(k): self._value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._value(v) for v in value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes = {
                f.name: masked
                for f in dataclasses.fields(value)
                if f.init and (masked := self._value(getattr(value, f.name))) is not getattr(value, f.name)
            }
            return dataclasses.replace(value, **changes) if changes else value
        return value


def case_secrets(case: CaseRun) -> tuple[str, ...]:
    """The twin's secrets and those a noSecretDisclosure expectation of the case names."""
    extra = [
        s
        for e in case.expectations
        if isinstance(e, Mapping) and e.get("type") == "noSecretDisclosure" and isinstance(e.get("secrets"), list)
        for s in e["secrets"]
        if isinstance(s, str)
    ]
    return (*case.secrets, *extra)


def case_mask(*cases: CaseRun | None) -> SecretMask:
    return SecretMask(s for case in cases if case is not None for s in case_secrets(case))
