"""What every transactional loop (the planner's, the batch worker's) does about librdkafka's hangs.

librdkafka's `send_offsets_to_transaction` can block far past its own timeout once the group coordinator was
away (a broker restart): its coordinator request is never timed out (confluentinc/librdkafka#5456, #5511,
open in 2.16). A worker blocked there never commits, never stops, and holds its partitions: alerts stop.
Two defences, used by both loops:

- `ClusterWatch`: the clients' error callback notes that the cluster was unreachable; the loop then starts a
  fresh producer (same transactional id: it fences the old one and aborts its open transaction) before its
  next transaction, which is what avoids the hang in the usual case;
- `bounded`: the call itself runs on a helper thread and is abandoned after its timeout plus a grace, raised
  as a fatal `_TIMED_OUT` so the caller replaces the producer and redoes the batch from committed offsets.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

T = TypeVar("T")

GRACE_S = 5.0
# what a client's error callback reports while the broker is away
LOST_CODES = frozenset({KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT})


class ClusterWatch:
    """An error callback (`error_cb`) remembering that the cluster was unreachable since the last `take`."""

    def __init__(self) -> None:
        self._lost = False

    def on_error(self, err: KafkaError) -> None:
        if err.code() in LOST_CODES:
            self._lost = True

    def take(self) -> bool:
        lost, self._lost = self._lost, False
        return lost


def bounded(timeout_s: float, call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` on a daemon thread; a fatal `_TIMED_OUT` KafkaException if it has not returned after
    `timeout_s` + GRACE_S (the thread is left behind, blocked in librdkafka; its producer is replaced)."""
    what = getattr(call, "__name__", "call")
    result: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def run() -> None:
        try:
            result.append(call(*args))
        except BaseException as exc:  # handed to the caller's thread as is
            failure.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=f"kafka-{what}", daemon=True).start()
    if not done.wait(timeout_s + GRACE_S):
        reason = f"{what} did not return within {timeout_s + GRACE_S:.0f} s (librdkafka#5456)"
        raise KafkaException(KafkaError(KafkaError._TIMED_OUT, reason, fatal=True))
    if failure:
        raise failure[0]
    return result[0]
