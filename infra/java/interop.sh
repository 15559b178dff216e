#!/usr/bin/env bash
# AgentTwin's Java interop tools (infra/java): build once, print the runtime classpath.
#
#   interop.sh classpath     build if these sources changed since the last build, print the classpath
#   interop.sh run CLASS ... run a class of the jar (e.g. dev.agenttwin.interop.DecodeLog)
#
# The build goes to $AGENTTWIN_CACHE_DIR (default $XDG_CACHE_HOME/agenttwin, else ~/.cache/agenttwin) under
# interop-<hash of pom + sources>/; dependencies (Apache Avro) stay in the local Maven repository.
set -Eeuo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_ROOT="${AGENTTWIN_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/agenttwin}"

die() { echo "interop: FAILED: $*" >&2; exit 1; }

source_hash() {
  (cd "$HERE" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

BUILD="$CACHE_ROOT/interop-$(source_hash)"

classpath() {
  if [[ ! -f "$BUILD/classpath.txt" ]]; then
    command -v mvn >/dev/null || die "mvn not found (install Maven: apt-get install maven)"
    mkdir -p "$CACHE_ROOT"
    exec 8>"$CACHE_ROOT/interop-build.lock"
    flock -w 600 8 || die "could not get $CACHE_ROOT/interop-build.lock within 600 s"
    if [[ ! -f "$BUILD/classpath.txt" ]]; then
      mkdir -p "$BUILD"
      if ! mvn -q -B -f "$HERE/pom.xml" package "-Dagenttwin.build.dir=$BUILD/target" \
          dependency:build-classpath -Dmdep.includeScope=runtime "-Dmdep.outputFile=$BUILD/deps.txt" \
          >"$BUILD/build.log" 2>&1; then
        tail -n 30 "$BUILD/build.log" >&2
        die "mvn package failed (full output: $BUILD/build.log)"
      fi
      printf '%s:%s' "$BUILD/target/agenttwin-interop-1.jar" "$(cat "$BUILD/deps.txt")" >"$BUILD/classpath.tmp"
      mv "$BUILD/classpath.tmp" "$BUILD/classpath.txt"
    fi
    exec 8>&-
  fi
  cat "$BUILD/classpath.txt"
}

case "${1:-}" in
  classpath) classpath; echo ;;
  run)       shift; cp="$(classpath)"; exec java -Xmx512m -cp "$cp" "$@" ;;
  *)         echo "usage: $(basename "$0") classpath | run CLASS [ARGS...]" >&2; exit 2 ;;
esac
