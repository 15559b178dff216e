"""Schema files (JSON Schema, Avro, ClickHouse DDL). Data only; this module just locates them."""

from pathlib import Path

SCHEMA_DIR = Path(__file__).resolve().parent
JSON_DIR = SCHEMA_DIR / "json"
AVRO_DIR = SCHEMA_DIR / "avro"
CLICKHOUSE_DIR = SCHEMA_DIR / "clickhouse"

__all__ = ["AVRO_DIR", "CLICKHOUSE_DIR", "JSON_DIR", "SCHEMA_DIR"]
