"""API key -> tenant. Only SHA-256 digests of keys are held in memory; the tenant of a request is the
tenant of the key that authenticated it, and nothing else.

Key files: one `KEY=TENANT` per line (`#` comments), where KEY may be `sha256:<64 hex>` so plaintext keys
need not be on disk; or a JSON object {"KEY": "TENANT", ...}. The environment (IngestSettings) can add
`AGENTTWIN_INGEST_API_KEYS="key1=tenant1,key2=tenant2"` and name a file in AGENTTWIN_INGEST_API_KEYS_FILE.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from producers.otlp.codec import DEFAULT_MAX_BODY_BYTES
from streams.ids import SIMULATION_NAMESPACE, is_simulation_tenant

HASH_PREFIX = "sha256:"
API_KEY_HEADER = "x-agenttwin-api-key"


class KeyFileError(ValueError):
    """A key file or key list that cannot be read: the message says where."""


def key_digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _digest_of(entry: str) -> str:
    if entry.startswith(HASH_PREFIX):
        digest = entry[len(HASH_PREFIX) :].lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise KeyFileError(f"{HASH_PREFIX} must be followed by 64 hex digits")
        return digest
    return key_digest(entry)


def _two_tenants(first: str, second: str) -> str:
    """The refusal of one key under two tenants (the key itself is a secret: never in the message)."""
    return (
        f"a key listed for tenant {first} is listed for tenant {second} too: one key under two tenants would "
        "let the last one win silently; give each tenant its own key"
    )


class ApiKeys:
    """Digest -> tenant. Build it with `ApiKeys.from_pairs` or `load_api_keys`."""

    def __init__(self, digests: Mapping[str, str]) -> None:
        for tenant in digests.values():
            if is_simulation_tenant(tenant):
                raise KeyFileError(
                    f"tenant {tenant!r} is in the namespace {SIMULATION_NAMESPACE!r} reserved for simulations; "
                    "no API key may map to it"
                )
        self._by_digest = dict(digests)

    @classmethod
    def from_pairs(cls, pairs: Iterable[tuple[str, str]]) -> ApiKeys:
        digests: dict[str, str] = {}
        for n, (key, tenant) in enumerate(pairs, 1):
            key, tenant = key.strip(), tenant.strip()
            if not key or not tenant:
                raise KeyFileError("every API key needs a non-empty key and tenant")
            digest = _digest_of(key)
            if digests.get(digest, tenant) != tenant:
                raise KeyFileError(f"entry {n}: {_two_tenants(digests[digest], tenant)}")
            digests[digest] = tenant
        return cls(digests)

    @classmethod
    def from_mapping(cls, keys: Mapping[str, str]) -> ApiKeys:
        return cls.from_pairs(keys.items())

    def merged(self, other: ApiKeys) -> ApiKeys:
        return ApiKeys({**self._by_digest, **other._by_digest})

    def tenant_for(self, key: str | None) -> str | None:
        if not key:
            return None
        return self._by_digest.get(key_digest(key))

    def __len__(self) -> int:
        return len(self._by_digest)


def key_from_headers(api_key_header: str | None, authorization: str | None) -> str | None:
    """`x-agenttwin-api-key: KEY` first (when present and not blank it alone decides, even if unknown),
    else `Authorization: Bearer KEY` (scheme case-insensitive, RFC 9110); any other scheme is no key."""
    if api_key_header and api_key_header.strip():
        return api_key_header.strip()
    if authorization:
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return None


def parse_pairs(text: str, *, separator: str = "\n", where: str = "API keys") -> list[tuple[str, str]]:
    pairs = []
    for n, raw in enumerate(text.split(separator), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, eq, tenant = line.rpartition("=")
        if not eq:
            raise KeyFileError(f"{where}, entry {n}: expected KEY=TENANT")
        pairs.append((key, tenant))
    return pairs


def read_key_file(path: Path) -> ApiKeys:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise KeyFileError(f"{path}: {exc.strerror or exc}") from None
    if text.lstrip().startswith("{"):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise KeyFileError(f"{path}: invalid JSON: {exc}") from None
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
            raise KeyFileError(f"{path}: expected an object of key -> tenant strings")
        pairs = list(doc.items())
    else:
        pairs = parse_pairs(text, where=str(path))
    try:
        return ApiKeys.from_pairs(pairs)
    except KeyFileError as exc:
        raise KeyFileError(f"{path}: {exc}") from None


class IngestSettings(BaseSettings):
    """AGENTTWIN_INGEST_API_KEYS, AGENTTWIN_INGEST_API_KEYS_FILE, AGENTTWIN_INGEST_MAX_BODY_BYTES."""

    model_config = SettingsConfigDict(env_prefix="AGENTTWIN_INGEST_", extra="ignore")

    api_keys: SecretStr | None = None
    api_keys_file: Path | None = None
    max_body_bytes: int = Field(default=DEFAULT_MAX_BODY_BYTES, gt=0)


def load_api_keys(settings: IngestSettings, file: Path | None = None) -> ApiKeys:
    """Keys from the settings' list, the settings' file and `file` (a CLI flag), later sources winning (a
    documented precedence); within one source, a key listed under two tenants is refused."""
    keys = ApiKeys({})
    if settings.api_keys is not None:
        where = "AGENTTWIN_INGEST_API_KEYS"
        pairs = parse_pairs(settings.api_keys.get_secret_value(), separator=",", where=where)
        try:
            keys = keys.merged(ApiKeys.from_pairs(pairs))
        except KeyFileError as exc:
            raise KeyFileError(f"{where}: {exc}") from None
    for path in (settings.api_keys_file, file):
        if path is not None:
            keys = keys.merged(read_key_file(path.expanduser()))
    return keys
