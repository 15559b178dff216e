"""The one settings object of a process, backed by the environment. os.environ is read nowhere else."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from evaluation.judges.settings import JudgeSettings
from streams.kafka.naming import Naming, WireFormat
from streams.kafka.naming_defaults import DEFAULT_PREFIX, SINGLE_OBJECT_WIRE, WIRE_MODES, WireMode


class Settings(BaseSettings):
    """Environment variables (all optional):

    AGENTTWIN_DATA_DIR         where the embedded runtime keeps topics, offsets and chDB (default ~/.agenttwin)
    KAFKA_BOOTSTRAP_SERVERS    run through a Kafka cluster instead of the embedded log (also --kafka)
    AGENTTWIN_CLICKHOUSE_URL   a ClickHouse server (http://user:pass@host:8123/db) instead of embedded chDB
    AGENTTWIN_DEBUG            1: show the traceback of an internal error instead of one line
    AGENTTWIN_TOPIC_PREFIX     prefix of every Kafka topic, group and transactional id (default `agenttwin.`;
                               empty = the bare names of clusters written before the prefix; also --topic-prefix)
    AGENTTWIN_WIRE             single-object (default) | confluent: how values are framed on Kafka (also --wire)
    AGENTTWIN_SCHEMA_REGISTRY_URL  a Confluent-compatible schema registry (also --schema-registry)

    The judge has its own block of settings (evaluation.judges.settings.JudgeSettings, reached through
    `judge_settings()`): AGENTTWIN_JUDGE_PROVIDER = fake | anthropic | openai (default fake: deterministic,
    not a language model), AGENTTWIN_JUDGE_MODEL, AGENTTWIN_JUDGE_BASE_URL, AGENTTWIN_JUDGE_API_KEY /
    ANTHROPIC_API_KEY.
    """

    model_config = SettingsConfigDict(extra="ignore")

    data_dir: Path = Field(default=Path("~/.agenttwin"), alias="AGENTTWIN_DATA_DIR")
    kafka_bootstrap_servers: str | None = Field(default=None, alias="KAFKA_BOOTSTRAP_SERVERS")
    clickhouse_url: str | None = Field(default=None, alias="AGENTTWIN_CLICKHOUSE_URL")
    debug: bool = Field(default=False, alias="AGENTTWIN_DEBUG")
    topic_prefix: str = Field(default=DEFAULT_PREFIX, alias="AGENTTWIN_TOPIC_PREFIX")
    wire: str = Field(default=SINGLE_OBJECT_WIRE, alias="AGENTTWIN_WIRE")
    schema_registry_url: str | None = Field(default=None, alias="AGENTTWIN_SCHEMA_REGISTRY_URL")

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser()

    def naming(self, prefix: str | None = None, wire: str | None = None, registry: str | None = None) -> Naming:
        """Kafka names and value framing: flags first, then the environment (ValueError when invalid)."""
        mode = wire or self.wire
        if mode not in WIRE_MODES:
            raise ValueError(f"wire format {mode!r}: one of {', '.join(WIRE_MODES)}")
        fmt = WireFormat(cast(WireMode, mode), registry or self.schema_registry_url or None)
        return Naming(self.topic_prefix if prefix is None else prefix, fmt)

    def judge_settings(self) -> JudgeSettings:
        return JudgeSettings()


def load_settings() -> Settings:
    return Settings()
