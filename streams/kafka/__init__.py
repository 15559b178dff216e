"""The Kafka runtime: the same processors as the embedded runtime, on a real Kafka cluster.

Clients: confluent-kafka for admin, publishing, the transactional planner and the ClickHouse sink;
faust-streaming agents (aiokafka) for the stateful processors, each store kept per input partition on a
compacted changelog the worker writes and re-reads itself (partition_stores.py). Every producer
partitions keys with murmur2, so a key lands on the same partition number whoever wrote it.
"""
