"""`python -m tests.integration.kafka.warehouse_dump DATA_DIR OUT`: pickle every projection table of the chDB
warehouse `agenttwin worker sink` writes under DATA_DIR (rows with FINAL and without) to OUT."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from consumers.clickhouse import open_warehouse
from tests.integration.kafka.kafka_pipeline_support import dump_tables


def main(data_dir: str, out: str) -> None:
    with open_warehouse(None, Path(data_dir)) as warehouse:
        Path(out).write_bytes(pickle.dumps(dump_tables(warehouse)))


if __name__ == "__main__":
    main(*sys.argv[1:])
