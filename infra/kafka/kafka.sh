#!/usr/bin/env bash
# A real single-node Apache Kafka 4.x broker (KRaft, combined broker+controller) on 127.0.0.1,
# run from Maven Central jars: no Docker, no Kafka distribution tarball.
#
#   kafka.sh fetch | up | down | restart | kill | wipe | status | lib | tool NAME [ARGS...]
#
# `kill` stops the broker with SIGKILL, as a crash or the OOM killer would: no clean shutdown, the data
# stays and the next `up` recovers its logs (what the fault tests do to prove nothing is lost).
# `lib` prints the folder of the jars (fetching them first if needed). `tool` runs one of Kafka's own
# command-line tools from those jars: consumer-groups (= kafka-consumer-groups.sh), console-consumer
# (= kafka-console-consumer.sh), topics (= kafka-topics.sh), e.g.
#   kafka.sh tool consumer-groups --bootstrap-server 127.0.0.1:9092 --describe --all-groups
#
# Environment (all optional):
#   KAFKA_PORT=9092  KAFKA_CONTROLLER_PORT=9093  KAFKA_NUM_PARTITIONS=3
#   KAFKA_HEAP_OPTS="-Xms256m -Xmx512m"  KAFKA_READY_TIMEOUT=90  KAFKA_STOP_TIMEOUT=60
#   AGENTTWIN_KAFKA_DIR   state root (default: this folder); data in $root/data, pid+logs in $root/run
#   AGENTTWIN_CACHE_DIR   downloads (jars), never in the checkout: default $XDG_CACHE_HOME/agenttwin, else
#                         ~/.cache/agenttwin; the jars go to kafka-lib-<pom hash>/ in it, shared by every
#                         checkout and state root
#   AGENTTWIN_PYTHON      python with confluent_kafka for the readiness probe (default: repo .venv;
#                         "none" probes with ReadyProbe.java instead)
# status exits 0 when up and answering, 1 when running but not answering, 3 when down.
set -Eeuo pipefail
# Every failure path should end in die(); this catches the ones that do not, so none is silent.
trap 'echo "kafka: FAILED: unexpected error (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
CACHE_ROOT="${AGENTTWIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agenttwin}"
STATE_ROOT="${AGENTTWIN_KAFKA_DIR:-$HERE}"
DATA_DIR="$STATE_ROOT/data"
LOG_DIRS="$DATA_DIR/logs"
RUN_DIR="$STATE_ROOT/run"
PID_FILE="$RUN_DIR/kafka.pid"
PROPS="$RUN_DIR/server.properties"
OUT_FILE="$RUN_DIR/kafka.out"
SERVER_LOG="$RUN_DIR/server.log"
FORMAT_STAMP="$DATA_DIR/agenttwin-format.env"

HOST=127.0.0.1
PORT="${KAFKA_PORT:-9092}"
CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
NUM_PARTITIONS="${KAFKA_NUM_PARTITIONS:-3}"
HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}"
READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-90}"
STOP_TIMEOUT="${KAFKA_STOP_TIMEOUT:-60}"
BOOTSTRAP="$HOST:$PORT"

say() { echo "kafka: $*"; }
die() { echo "kafka: FAILED: $*" >&2; exit 1; }
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
secs_since() { local ms=$(( $(now_ms) - $1 )); printf '%d.%01d' $(( ms / 1000 )) $(( (ms % 1000) / 100 )); }

LOG_OPTS=("-Dlog4j2.configurationFile=$HERE/log4j2.yaml" "-Dkafka.logs.dir=$RUN_DIR")
read -r -a HEAP <<<"$HEAP_OPTS"
# Kafka's own start-script JVM flags minus GC logging; heap bounded for a 2-core dev box.
BROKER_JVM=("${HEAP[@]}" -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35
  -XX:+ExplicitGCInvokesConcurrent -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true "${LOG_OPTS[@]}")
# One-shot tools (StorageTool) need little memory and must not depend on the broker's heap setting.
TOOL_JVM=(-Xmx256m "${LOG_OPTS[@]}")

# ---------------------------------------------------------------- fetch

pom_hash() { sha256sum "$HERE/pom.xml" | cut -c1-16; }

# Content-addressed by the pom: a changed dependency list gets a folder of its own.
LIB="$CACHE_ROOT/kafka-lib-$(pom_hash)"

lib_ready() { [[ -f "$LIB/.fetched" ]]; }

do_fetch() {
  if lib_ready; then
    say "jars present ($(find "$LIB" -name '*.jar' | wc -l) in $LIB), fetch skipped"
    return 0
  fi
  command -v mvn >/dev/null || die "mvn not found (install Maven: apt-get install maven)"
  mkdir -p "$CACHE_ROOT"
  # Checkouts and state roots share the cache: one fetch at a time, and whoever waited finds it done.
  exec 8>"$CACHE_ROOT/kafka-fetch.lock"
  flock -w 600 8 || die "could not get $CACHE_ROOT/kafka-fetch.lock within 600 s"
  if lib_ready; then
    exec 8>&-
    say "jars present ($(find "$LIB" -name '*.jar' | wc -l) in $LIB), fetched meanwhile"
    return 0
  fi
  local t0 tmp log
  t0=$(now_ms)
  tmp="$CACHE_ROOT/kafka-lib.tmp.$$"
  log="$CACHE_ROOT/kafka-fetch.log"
  rm -rf "$tmp"
  say "fetching broker jars from Maven Central into $LIB ..."
  # Copy into a temp dir and swap, so an interrupted fetch never leaves a half-filled folder that looks done.
  if ! mvn -q -B -f "$HERE/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$tmp" >"$log" 2>&1; then
    tail -n 20 "$log" >&2 || true
    rm -rf "$tmp"
    die "mvn dependency:copy-dependencies failed (full output: $log)"
  fi
  rm -f "$log"
  rm -rf "$LIB"
  touch "$tmp/.fetched"
  mv "$tmp" "$LIB"
  exec 8>&-
  say "fetched $(find "$LIB" -name '*.jar' | wc -l) jars ($(du -sh "$LIB" | cut -f1)) in $(secs_since "$t0") s"
}

# Kafka's own command-line tools, from the same jars (no distribution tarball, no bin/ scripts).
do_tool() {
  local name="${1:-}" class
  case "$name" in
    consumer-groups)  class=org.apache.kafka.tools.consumer.group.ConsumerGroupCommand ;;
    console-consumer) class=org.apache.kafka.tools.consumer.ConsoleConsumer ;;
    topics)           class=org.apache.kafka.tools.TopicCommand ;;
    *) echo "usage: $(basename "$0") tool consumer-groups|console-consumer|topics [ARGS...]" >&2; exit 2 ;;
  esac
  shift
  lib_ready || do_fetch >&2
  command -v java >/dev/null || die "java not found (Kafka 4.x needs Java 17+)"
  exec java -Xmx256m -Dlog4j2.configurationFile="$HERE/tools-log4j2.yaml" \
    -cp "$LIB/*${AGENTTWIN_TOOL_CLASSPATH:+:$AGENTTWIN_TOOL_CLASSPATH}" "$class" "$@"
}

# ---------------------------------------------------------------- process helpers

# The pid from the pid file, if that process is still our broker (guards against pid reuse).
live_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  [[ -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "kafka.Kafka $PROPS" || return 1
  echo "$pid"
}

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/$HOST/$1" 2>/dev/null; }

pick_python() {
  local py
  [[ "${AGENTTWIN_PYTHON:-}" != none ]] || return 1
  for py in "${AGENTTWIN_PYTHON:-}" "$REPO/.venv/bin/python" python3; do
    [[ -n "$py" ]] || continue
    if "$py" -c 'import confluent_kafka' 2>/dev/null; then echo "$py"; return 0; fi
  done
  return 1
}

# One metadata round trip: succeeds when the broker lists itself as a live broker.
probe_metadata() {
  local py="$1" timeout_s="$2"
  if [[ -n "$py" ]]; then
    "$py" - "$BOOTSTRAP" "$timeout_s" 2>/dev/null <<'PY'
import sys
from confluent_kafka.admin import AdminClient
bootstrap, timeout_s = sys.argv[1], float(sys.argv[2])
admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
meta = admin.list_topics(timeout=timeout_s)
sys.exit(0 if meta.brokers else 1)
PY
  else
    java "${TOOL_JVM[@]}" -cp "$LIB/*" "$HERE/ReadyProbe.java" "$BOOTSTRAP" "$timeout_s" >/dev/null 2>&1
  fi
}

# Byte offset of server.log when this start began, so a failure shows only this attempt's lines.
LOG_START=0

log_tail() {
  if [[ -s "$OUT_FILE" ]]; then echo "---- last lines of $OUT_FILE" >&2; tail -n 25 "$OUT_FILE" >&2; fi
  local recent=""
  if [[ -s "$SERVER_LOG" ]]; then
    recent="$(tail -c "+$(( LOG_START + 1 ))" "$SERVER_LOG" | grep -v $'^\t' | tail -n 25)" || true
  fi
  if [[ -n "$recent" ]]; then echo "---- last lines of $SERVER_LOG (config dumps left out)" >&2; echo "$recent" >&2; fi
}

# ---------------------------------------------------------------- up

write_properties() {
  mkdir -p "$RUN_DIR"
  cat >"$PROPS" <<EOF
# Written by infra/kafka/kafka.sh on every 'up'; edit the script, not this file.
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=$HOST:$CONTROLLER_PORT
listeners=PLAINTEXT://$HOST:$PORT,CONTROLLER://$HOST:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://$HOST:$PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=$LOG_DIRS
num.partitions=$NUM_PARTITIONS
default.replication.factor=1
min.insync.replicas=1
# One node: every internal topic must have replication factor 1, or groups and transactions hang.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Fewer internal partitions than the default 50: their first creation is much faster on 2 cores.
offsets.topic.num.partitions=10
transaction.state.log.num.partitions=10
group.initial.rebalance.delay.ms=0
auto.create.topics.enable=true
delete.topic.enable=true
log.retention.hours=168
log.segment.bytes=104857600
EOF
}

format_if_needed() {
  if [[ -f "$LOG_DIRS/meta.properties" ]]; then
    local formatted_port=""
    if [[ -f "$FORMAT_STAMP" ]]; then formatted_port="$(sed -n 's/^controller_port=//p' "$FORMAT_STAMP")"; fi
    # The standalone voter set records the controller endpoint; a different port would strand the broker.
    if [[ -n "$formatted_port" && "$formatted_port" != "$CONTROLLER_PORT" ]]; then
      die "data in $DATA_DIR was formatted for controller port $formatted_port, not $CONTROLLER_PORT (run 'kafka.sh wipe' or set KAFKA_CONTROLLER_PORT=$formatted_port)"
    fi
    say "storage already formatted ($LOG_DIRS)"
    return 0
  fi
  mkdir -p "$LOG_DIRS"
  local cluster_id
  cluster_id="$(java "${TOOL_JVM[@]}" -cp "$LIB/*" kafka.tools.StorageTool random-uuid 2>>"$OUT_FILE" | tail -n 1)" || true
  [[ "$cluster_id" =~ ^[A-Za-z0-9_-]{22}$ ]] || die "StorageTool random-uuid gave no cluster id (see $OUT_FILE)"
  if ! java "${TOOL_JVM[@]}" -cp "$LIB/*" kafka.tools.StorageTool format --standalone \
      --cluster-id "$cluster_id" --config "$PROPS" >>"$OUT_FILE" 2>&1; then
    log_tail
    die "storage format failed (see $OUT_FILE)"
  fi
  printf 'cluster_id=%s\ncontroller_port=%s\n' "$cluster_id" "$CONTROLLER_PORT" >"$FORMAT_STAMP"
  say "storage formatted (cluster id $cluster_id, $LOG_DIRS)"
}

wait_ready() {
  local pid="$1" t0="$2" py deadline
  py="$(pick_python || true)"
  [[ -n "$py" ]] || say "no python with confluent_kafka; probing with java (slower)"
  deadline=$(( $(date +%s) + READY_TIMEOUT ))
  while (( $(date +%s) < deadline )); do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PID_FILE"
      log_tail
      die "broker process $pid exited during startup"
    fi
    if port_open "$PORT" && probe_metadata "$py" 5; then
      say "up at $BOOTSTRAP (pid $pid), ready in $(secs_since "$t0") s; log $SERVER_LOG"
      return 0
    fi
    sleep 0.5
  done
  log_tail
  stop_pid "$pid" >/dev/null
  die "broker not ready within ${READY_TIMEOUT} s (stopped it again)"
}

do_up() {
  local pid
  if pid="$(live_pid)"; then
    local py
    py="$(pick_python || true)"
    if probe_metadata "$py" 10; then
      say "already up at $BOOTSTRAP (pid $pid)"
      return 0
    fi
    die "broker process $pid is running but does not answer on $BOOTSTRAP (try 'kafka.sh restart')"
  fi
  rm -f "$PID_FILE"
  command -v java >/dev/null || die "java not found (Kafka 4.x needs Java 17+)"
  do_fetch
  local p
  for p in "$PORT" "$CONTROLLER_PORT"; do
    if port_open "$p"; then die "port $p on $HOST is already in use by another process"; fi
  done
  write_properties
  format_if_needed
  local t0
  t0=$(now_ms)
  say "starting broker (heap $HEAP_OPTS, data $DATA_DIR)"
  : >"$OUT_FILE"
  LOG_START=$(stat -c %s "$SERVER_LOG" 2>/dev/null || echo 0)
  # setsid: the broker outlives this script and is not hit by Ctrl-C in the caller's terminal.
  # 9>&- : do not hand the lock descriptor to the broker, or the lock would live as long as it does.
  setsid java "${BROKER_JVM[@]}" -cp "$LIB/*" kafka.Kafka "$PROPS" >>"$OUT_FILE" 2>&1 </dev/null 9>&- &
  pid=$!
  echo "$pid" >"$PID_FILE"
  wait_ready "$pid" "$t0"
}

# ---------------------------------------------------------------- down

# SIGTERM (Kafka shuts down cleanly on it), then SIGKILL after STOP_TIMEOUT. Prints how it ended.
stop_pid() {
  local pid="$1" t0 deadline
  t0=$(now_ms)
  kill -TERM "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + STOP_TIMEOUT ))
  while kill -0 "$pid" 2>/dev/null; do
    if (( $(date +%s) >= deadline )); then
      kill -KILL "$pid" 2>/dev/null || true
      while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
      echo "killed with SIGKILL after ${STOP_TIMEOUT} s"
      return 0
    fi
    sleep 0.2
  done
  echo "stopped cleanly in $(secs_since "$t0") s"
}

do_down() {
  local pid
  if ! pid="$(live_pid)"; then
    rm -f "$PID_FILE"
    say "already down"
    return 0
  fi
  say "stopping broker (pid $pid) ..."
  local how
  how="$(stop_pid "$pid")"
  rm -f "$PID_FILE"
  say "down: $how"
}

# A crash: SIGKILL, no controlled shutdown, no flush; the data stays for the next `up` to recover.
do_kill() {
  local pid deadline
  if ! pid="$(live_pid)"; then
    rm -f "$PID_FILE"
    say "already down"
    return 0
  fi
  kill -KILL "$pid" 2>/dev/null || true
  deadline=$(( $(date +%s) + STOP_TIMEOUT ))
  # Gone = no live process (a killed one not yet reaped, a zombie, has no command line: kill -0 would wait for
  # its reaper) and its ports closed (a dying JVM's threads close its sockets last, after its command line).
  while live_pid >/dev/null || port_open "$PORT" || port_open "$CONTROLLER_PORT"; do
    (( $(date +%s) < deadline )) || die "broker process $pid or its ports still there ${STOP_TIMEOUT} s after SIGKILL"
    sleep 0.1
  done
  rm -f "$PID_FILE"
  say "killed (pid $pid) with SIGKILL; data kept in $DATA_DIR"
}

do_wipe() {
  do_down
  rm -rf "$DATA_DIR"
  say "data removed ($DATA_DIR)"
}

# Keeps the data: the point is a broker that goes away and comes back with its topics and offsets.
do_restart() {
  do_down
  do_up
}

do_status() {
  local pid py
  if ! pid="$(live_pid)"; then
    say "down (data: $( [[ -f "$LOG_DIRS/meta.properties" ]] && echo "formatted, $DATA_DIR" || echo none ))"
    return 3
  fi
  py="$(pick_python || true)"
  if probe_metadata "$py" 5; then
    say "up at $BOOTSTRAP (pid $pid), answering metadata; data $DATA_DIR"
    return 0
  fi
  say "running (pid $pid) but not answering on $BOOTSTRAP"
  return 1
}

# ---------------------------------------------------------------- main

with_lock() {
  # Several test sessions may call up/down at once; serialise them per state root.
  mkdir -p "$RUN_DIR"
  exec 9>"$RUN_DIR/kafka.lock"
  flock -w 300 9 || die "could not get $RUN_DIR/kafka.lock within 300 s"
  "$@"
}

cmd="${1:-}"
case "$cmd" in
  fetch)   with_lock do_fetch ;;
  up)      with_lock do_up ;;
  down)    with_lock do_down ;;
  restart) with_lock do_restart ;;
  kill)    with_lock do_kill ;;
  wipe)    with_lock do_wipe ;;
  status)  do_status || exit $? ;;
  lib)     lib_ready || do_fetch >&2; echo "$LIB" ;;
  tool)    shift; do_tool "$@" ;;
  *)       echo "usage: $(basename "$0") fetch|up|down|restart|kill|wipe|status|lib|tool NAME [ARGS...]" >&2; exit 2 ;;
esac
