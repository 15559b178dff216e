#!/usr/bin/env bash
# A real Confluent-compatible schema registry on 127.0.0.1: Apicurio Registry (Apache-2.0) from Maven
# Central (io.apicurio:apicurio-registry-app, its `all` tar.gz: the Quarkus app), with its Confluent API at
# http://127.0.0.1:$REGISTRY_PORT/apis/ccompat/v7. No Docker.
#
#   registry.sh fetch | up | down | status | url
#
# Environment (all optional):
#   REGISTRY_PORT=8081                  HTTP port (Confluent's default)
#   REGISTRY_MANAGEMENT_PORT            Quarkus's management interface (health, metrics; default REGISTRY_PORT+1000)
#   AGENTTWIN_REGISTRY_DIR              state root (default: $AGENTTWIN_CACHE_DIR/registry-state); schemas in
#                                       $root/data (H2 file database: ids survive restarts), pid + log in $root/run
#   AGENTTWIN_CACHE_DIR                 downloads (default $XDG_CACHE_HOME/agenttwin, else ~/.cache/agenttwin)
#   AGENTTWIN_REGISTRY_JAVA             a java of version 21+ (Apicurio 3 needs it); default: JAVA_HOME, then
#                                       java on PATH, then /usr/lib/jvm/*, whichever is 21 or newer
#   REGISTRY_HEAP_OPTS="-Xms128m -Xmx384m"  REGISTRY_READY_TIMEOUT=120
# status exits 0 when up and answering, 3 when down.
set -Eeuo pipefail
trap 'echo "registry: FAILED: unexpected error (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

VERSION=3.3.3
CACHE_ROOT="${AGENTTWIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agenttwin}"
APP="$CACHE_ROOT/apicurio-registry-$VERSION"
STATE_ROOT="${AGENTTWIN_REGISTRY_DIR:-$CACHE_ROOT/registry-state}"
DATA_DIR="$STATE_ROOT/data"
RUN_DIR="$STATE_ROOT/run"
PID_FILE="$RUN_DIR/registry.pid"
LOG_FILE="$RUN_DIR/registry.log"
PORT="${REGISTRY_PORT:-8081}"
MANAGEMENT_PORT="${REGISTRY_MANAGEMENT_PORT:-$(( PORT + 1000 ))}"
HEAP_OPTS="${REGISTRY_HEAP_OPTS:--Xms128m -Xmx384m}"
READY_TIMEOUT="${REGISTRY_READY_TIMEOUT:-120}"
URL="http://127.0.0.1:$PORT/apis/ccompat/v7"

say() { echo "registry: $*"; }
die() { echo "registry: FAILED: $*" >&2; exit 1; }

java_major() { "$1" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1; }

find_java() {
  local candidate major
  for candidate in "${AGENTTWIN_REGISTRY_JAVA:-}" "${JAVA_HOME:+$JAVA_HOME/bin/java}" "$(command -v java || true)" \
      /usr/lib/jvm/*/bin/java; do
    [[ -n "$candidate" && -x "$candidate" ]] || continue
    major="$(java_major "$candidate")"
    if [[ "$major" =~ ^[0-9]+$ ]] && (( major >= 21 )); then echo "$candidate"; return 0; fi
  done
  return 1
}

do_fetch() {
  if [[ -f "$APP/.fetched" ]]; then return 0; fi
  command -v mvn >/dev/null || die "mvn not found (install Maven: apt-get install maven)"
  mkdir -p "$CACHE_ROOT"
  exec 8>"$CACHE_ROOT/registry-fetch.lock"
  flock -w 600 8 || die "could not get $CACHE_ROOT/registry-fetch.lock within 600 s"
  if [[ -f "$APP/.fetched" ]]; then exec 8>&-; return 0; fi
  local tmp="$CACHE_ROOT/apicurio.tmp.$$" log="$CACHE_ROOT/registry-fetch.log"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  say "fetching io.apicurio:apicurio-registry-app:$VERSION (all.tar.gz) from Maven Central ..."
  if ! mvn -q -B dependency:copy "-Dartifact=io.apicurio:apicurio-registry-app:$VERSION:tar.gz:all" \
      "-DoutputDirectory=$tmp" >"$log" 2>&1; then
    tail -n 20 "$log" >&2 || true
    rm -rf "$tmp"
    die "mvn dependency:copy failed (full output: $log)"
  fi
  tar -xzf "$tmp"/apicurio-registry-app-*.tar.gz -C "$tmp"
  rm -f "$tmp"/apicurio-registry-app-*.tar.gz "$log"
  [[ -f "$tmp/quarkus-run.jar" ]] || die "the archive has no quarkus-run.jar"
  rm -rf "$APP"
  touch "$tmp/.fetched"
  mv "$tmp" "$APP"
  exec 8>&-
  say "fetched into $APP ($(du -sh "$APP" | cut -f1))"
}

live_pid() {
  [[ -f "$PID_FILE" ]] || return 1
  local pid
  pid="$(cat "$PID_FILE")"
  [[ "$pid" =~ ^[0-9]+$ && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "quarkus-run.jar" || return 1
  echo "$pid"
}

answers() { curl -sf -o /dev/null --max-time 5 "$URL/subjects"; }

do_up() {
  local pid java
  if pid="$(live_pid)"; then
    if answers; then say "already up at $URL (pid $pid)"; return 0; fi
    die "registry process $pid is running but does not answer on $URL"
  fi
  java="$(find_java)" || die "no Java 21+ found (Apicurio Registry $VERSION needs it; set AGENTTWIN_REGISTRY_JAVA)"
  do_fetch
  local p
  for p in "$PORT" "$MANAGEMENT_PORT"; do
    if timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$p" 2>/dev/null; then die "port $p on 127.0.0.1 is already in use"; fi
  done
  mkdir -p "$DATA_DIR" "$RUN_DIR"
  read -r -a heap <<<"$HEAP_OPTS"
  say "starting Apicurio Registry $VERSION on 127.0.0.1:$PORT ($java)"
  : >"$LOG_FILE"
  # setsid: the registry outlives this script; 9>&- : the lock must not live as long as the registry.
  cd "$RUN_DIR"
  setsid "$java" "${heap[@]}" -Dquarkus.http.host=127.0.0.1 "-Dquarkus.http.port=$PORT" \
    -Dquarkus.management.host=127.0.0.1 "-Dquarkus.management.port=$MANAGEMENT_PORT" -Dquarkus.log.level=WARN \
    "-Dapicurio.datasource.url=jdbc:h2:file:$DATA_DIR/registry;DB_CLOSE_ON_EXIT=FALSE" \
    -jar "$APP/quarkus-run.jar" >>"$LOG_FILE" 2>&1 </dev/null 9>&- &
  echo $! >"$PID_FILE"
  pid="$(cat "$PID_FILE")"
  local deadline=$(( $(date +%s) + READY_TIMEOUT ))
  while (( $(date +%s) < deadline )); do
    if ! kill -0 "$pid" 2>/dev/null; then tail -n 30 "$LOG_FILE" >&2; rm -f "$PID_FILE"; die "registry exited during startup"; fi
    if answers; then say "up at $URL (pid $pid)"; return 0; fi
    sleep 0.5
  done
  tail -n 30 "$LOG_FILE" >&2
  kill -TERM "$pid" 2>/dev/null || true
  die "registry not ready within $READY_TIMEOUT s (stopped it again)"
}

do_down() {
  local pid
  if ! pid="$(live_pid)"; then rm -f "$PID_FILE"; say "already down"; return 0; fi
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$PID_FILE"
  say "down"
}

do_status() {
  local pid
  if pid="$(live_pid)" && answers; then say "up at $URL (pid $pid)"; return 0; fi
  say "down"
  return 3
}

with_lock() {
  mkdir -p "$RUN_DIR"
  exec 9>"$RUN_DIR/registry.lock"
  flock -w 300 9 || die "could not get $RUN_DIR/registry.lock within 300 s"
  "$@"
}

case "${1:-}" in
  fetch)  do_fetch ;;
  up)     with_lock do_up ;;
  down)   with_lock do_down ;;
  status) do_status || exit $? ;;
  url)    echo "$URL" ;;
  *)      echo "usage: $(basename "$0") fetch|up|down|status|url" >&2; exit 2 ;;
esac
