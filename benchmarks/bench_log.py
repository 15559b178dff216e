"""The embedded log's own costs, each beside a raw baseline measured in the same run (not a timed test).

append: `append_many` of a batch (encode, one write of the block, one of its index entry, one fsync)
        beside a raw os.pwrite + os.fsync of the same number of bytes.
open:   opening a topic (every block checked against its CRC-32) beside reading its file's bytes.
Best of --rounds, so a loaded machine disturbs it less.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from streams.embedded_log import EmbeddedLog, NewRecord


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--records", type=int, default=50, help="records per batch")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    records = [NewRecord(os.urandom(300), key=f"key-{i}", headers={"event_id": "e" * 32}) for i in range(args.records)]
    append, raw_append, opened, raw_read, size = [], [], [], [], 0
    for _ in range(args.rounds):
        root = Path(tempfile.mkdtemp(prefix="bench-log-"))
        try:
            with EmbeddedLog(root / "log") as log:
                log.append("t", None, b"first")
                started = time.perf_counter()
                for _ in range(args.batches):
                    log.append_many("t", records)
                append.append((time.perf_counter() - started) / args.batches)
            path = root / "log" / "topics" / "t.avro"
            size = path.stat().st_size
            block = os.urandom(size // args.batches)
            fd = os.open(root / "raw", os.O_RDWR | os.O_CREAT, 0o644)
            started = time.perf_counter()
            for i in range(args.batches):
                os.pwrite(fd, block, i * len(block))
                os.fsync(fd)
            raw_append.append((time.perf_counter() - started) / args.batches)
            os.close(fd)
            started = time.perf_counter()
            EmbeddedLog(root / "log").close()
            opened.append(time.perf_counter() - started)
            started = time.perf_counter()
            path.read_bytes()
            raw_read.append(time.perf_counter() - started)
        finally:
            shutil.rmtree(root)
    print(f"workload: {args.batches} batches of {args.records} records, topic file {size / 1e6:.1f} MB")
    a, ra = min(append) * 1e3, min(raw_append) * 1e3
    print(f"append {a:8.3f} ms/batch   raw pwrite+fsync {ra:8.3f} ms/batch   ratio {ra / a:.3f}")
    o, rr = min(opened) * 1e3, min(raw_read) * 1e3
    print(f"open   {o:8.1f} ms         raw file read    {rr:8.1f} ms         ratio {rr / o:.3f}")


if __name__ == "__main__":
    main()
