"""The one settings object of a process, backed by the environment. os.environ is read nowhere else."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from evaluation.judges.settings import JudgeSettings


class Settings(BaseSettings):
    """Environment variables (all optional):

    AGENTTWIN_DATA_DIR         where the embedded runtime keeps topics, offsets and chDB (default ~/.agenttwin)
    KAFKA_BOOTSTRAP_SERVERS    run through a Kafka cluster instead of the embedded log (also --kafka)
    AGENTTWIN_CLICKHOUSE_URL   a ClickHouse server (http://user:pass@host:8123/db) instead of embedded chDB
    AGENTTWIN_DEBUG            1: show the traceback of an internal error instead of one line

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

    @property
    def resolved_data_dir(self) -> Path:
        return self.data_dir.expanduser()

    def judge_settings(self) -> JudgeSettings:
        return JudgeSettings()


def load_settings() -> Settings:
    return Settings()
