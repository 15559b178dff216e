-- The sink's own bookkeeping, kept in the warehouse beside the rows it describes (consumers/sink_progress.py).

-- Where the sink is in each source partition. Before a batch's rows are inserted the sink writes the batch's
-- range with done = false; after they are inserted, done = true. A batch found not done is redone exactly
-- (same range, so the same dedup tokens): a crash mid-batch never doubles a row. The latest version wins.
CREATE TABLE IF NOT EXISTS sink_offsets
(
    `source` String,
    `topic` String,
    `partition` Int32,
    `first_offset` Int64,
    `next_offset` Int64,
    `done` Bool,
    `version` UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (source, topic, partition);

-- The warehouse's identity: its Kafka sinks share the consumer group named after it (lag reporting and
-- sharing partitions between sinks of one warehouse), never a group of another warehouse.
CREATE TABLE IF NOT EXISTS sink_identity
(
    `warehouse_id` String
)
ENGINE = ReplacingMergeTree
ORDER BY (warehouse_id);

-- What each projection table holds: every event the sink inserted, by id, with a digest of its row. Topics are
-- at-least-once (a worker killed after its outputs were acknowledged but before it recorded that writes them
-- again on restart): an event whose identical copy a table already holds is not inserted again, so every
-- table holds each event once, read with FINAL or without. A changed event under the same id (a comparison
-- redone after a review) has another digest and replaces the row as before. The latest row per id wins.
CREATE TABLE IF NOT EXISTS sink_events
(
    `projection` String,
    `event_id` String,
    `digest` String
)
ENGINE = ReplacingMergeTree
ORDER BY (projection, event_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- Which DDL (SHA-256 of tables.sql, views.sql and sink.sql as shipped) was applied last to this warehouse. A sink
-- pass runs the DDL only when that digest is not here or a table or view it creates is missing (a new, rebuilt or
-- upgraded warehouse, one whose tables were dropped): executing its ~46 statements every pass cost most of
-- a pass (0.3-0.6 s). Written after the DDL ran, so a DDL cut short is run again.
CREATE TABLE IF NOT EXISTS sink_schema
(
    `ddl_sha256` String
)
ENGINE = ReplacingMergeTree
ORDER BY (ddl_sha256);
