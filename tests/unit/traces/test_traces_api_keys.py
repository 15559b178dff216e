"""The ingest API key: only its documented schemes, in its documented precedence, and never a tenant in the
namespace reserved for simulations."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from agenttwin.cli import main
from producers.otlp import ApiKeys, IngestServer
from producers.otlp.keys import IngestSettings, KeyFileError, key_from_headers, load_api_keys, read_key_file
from streams.embedded import EmbeddedRuntime
from streams.events import SpanRecorded
from tests.unit.traces.conftest import agent_trace

KEYS = ApiKeys.from_mapping({"key-acme": "acme", "key-beta": "beta"})


@pytest.mark.parametrize(
    ("api_key_header", "authorization", "tenant"),
    [
        ("key-acme", None, "acme"),
        (" key-acme ", None, "acme"),
        (None, "Bearer key-beta", "beta"),
        (None, "bearer key-beta", "beta"),  # the scheme is case-insensitive (RFC 9110)
        (None, "BEARER   key-beta  ", "beta"),
        # precedence: x-agenttwin-api-key decides whenever it is present, even against a valid bearer token
        ("key-acme", "Bearer key-beta", "acme"),
        ("key-beta", "Bearer key-acme", "beta"),
        ("wrong", "Bearer key-acme", None),
        ("   ", "Bearer key-acme", "acme"),  # a blank header is no header
        # only the Bearer scheme carries a key
        (None, "Basic key-acme", None),
        (None, "Token key-acme", None),
        (None, "key-acme", None),
        (None, "Bearerkey-acme", None),
        (None, "Bearer", None),
        (None, "Bearer    ", None),
        (None, "", None),
        (None, None, None),
    ],
)
def test_key_schemes_and_precedence(api_key_header: str | None, authorization: str | None, tenant: str | None) -> None:
    assert KEYS.tenant_for(key_from_headers(api_key_header, authorization)) == tenant


@pytest.mark.parametrize(
    ("headers", "status", "tenant"),
    [
        ({"x-agenttwin-api-key": "key-acme", "Authorization": "Bearer key-beta"}, 200, "acme"),
        ({"x-agenttwin-api-key": "nope", "Authorization": "Bearer key-beta"}, 401, None),
        ({"Authorization": "Basic key-acme"}, 401, None),
        ({"Authorization": "key-acme"}, 401, None),
        ({"Authorization": "bearer key-beta"}, 200, "beta"),
    ],
)
def test_the_receiver_applies_the_same_rule(
    server: IngestServer, runtime: EmbeddedRuntime, headers: dict[str, str], status: int, tenant: str | None
) -> None:
    resp = httpx.post(
        f"{server.url}/v1/traces",
        content=agent_trace().SerializeToString(),
        headers={"Content-Type": "application/x-protobuf", **headers},
        timeout=10,
    )
    assert resp.status_code == status
    stored = [e.tenant for e in runtime.read_events("spans") if isinstance(e, SpanRecorded)] if tenant else []
    assert stored == ([tenant] * 2 if tenant else [])


@pytest.mark.parametrize("tenant", ["sim:demo-co", "sim:", "SIM:x", " sim:padded"])
def test_no_key_may_map_to_the_simulation_namespace(tmp_path: Path, tenant: str) -> None:
    with pytest.raises(KeyFileError, match="reserved for simulations"):
        ApiKeys.from_mapping({"k": tenant})
    lines = tmp_path / "keys.txt"
    lines.write_text(f"ok-key=acme\nk={tenant}\n")
    with pytest.raises(KeyFileError, match=rf"^{re.escape(str(lines))}: tenant .* reserved for simulations"):
        read_key_file(lines)
    doc = tmp_path / "keys.json"
    doc.write_text(f'{{"k": "{tenant}"}}')
    with pytest.raises(KeyFileError, match=rf"^{re.escape(str(doc))}: tenant"):
        read_key_file(doc)
    settings = IngestSettings(api_keys=f"k={tenant}")  # type: ignore[arg-type]
    with pytest.raises(KeyFileError, match=r"^AGENTTWIN_INGEST_API_KEYS: tenant"):
        load_api_keys(settings)


def test_tenants_that_merely_look_alike_are_allowed() -> None:
    keys = ApiKeys.from_mapping({"a": "simulation", "b": "sim", "c": "acme:sim:1"})
    assert [keys.tenant_for(k) for k in "abc"] == ["simulation", "sim", "acme:sim:1"]


def test_ingest_refuses_such_a_key_file_with_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTTWIN_INGEST_API_KEYS", raising=False)
    monkeypatch.delenv("AGENTTWIN_INGEST_API_KEYS_FILE", raising=False)
    keys = tmp_path / "keys.txt"
    keys.write_text("k=sim:demo-co\n")
    code = main(["ingest", "--port", "0", "--api-keys", str(keys), "--data-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "reserved for simulations" in err and str(keys) in err


def test_a_key_listed_under_two_tenants_is_refused_at_load(tmp_path: Path) -> None:
    lines = tmp_path / "keys.txt"
    lines.write_text("shared-key=acme\nother=beta\nshared-key=beta\n")
    refusal = rf"^{re.escape(str(lines))}: entry 3: a key listed for tenant acme is listed for tenant beta too"
    with pytest.raises(KeyFileError, match=refusal):
        read_key_file(lines)
    doc = tmp_path / "keys.json"
    doc.write_text('{"shared-key": "acme", "shared-key ": "beta"}')  # the same key once stripped
    with pytest.raises(KeyFileError, match="two tenants") as caught:
        read_key_file(doc)
    assert "shared-key" not in str(caught.value).replace(str(doc), "")  # a secret is never echoed
    with pytest.raises(KeyFileError, match=r"^AGENTTWIN_INGEST_API_KEYS: entry 2: .*two tenants"):
        load_api_keys(IngestSettings(api_keys="k=acme,k=beta"))  # type: ignore[arg-type]
    lines.write_text("same=acme\nsame=acme\n")  # the same mapping twice is harmless
    assert read_key_file(lines).tenant_for("same") == "acme"
