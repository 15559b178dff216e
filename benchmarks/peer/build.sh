#!/usr/bin/env bash
# Build the peer collector once from Go modules (the module proxy), cached outside the checkout.
# Prints the binary's path. Rebuilds only when the manifest changes (its hash names the cache folder).
#   bash benchmarks/peer/build.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
builder_version="v0.165.0"  # the builder of the same core release as the manifest's modules
manifest="$here/builder-config.yaml"
hash="$(sha256sum "$manifest" | cut -c1-12)"
cache="${AGENTTWIN_CACHE:-$HOME/.cache/agenttwin}/otelcol-peer/$builder_version-$hash"
binary="$cache/dist/otelcol-peer"
if [[ -x "$binary" ]]; then
  echo "$binary"
  exit 0
fi
command -v go >/dev/null 2>&1 || { echo "build.sh: the Go toolchain (go) is needed to build the peer collector" >&2; exit 1; }
mkdir -p "$cache"
if [[ ! -x "$cache/bin/builder" ]]; then
  GOBIN="$cache/bin" go install "go.opentelemetry.io/collector/cmd/builder@$builder_version" >&2
fi
sed "s|OUTPUT_PATH|$cache/dist|" "$manifest" >"$cache/builder-config.yaml"
# -trimpath and no debug info: a smaller binary; GOFLAGS from the environment still apply.
(cd "$cache" && "$cache/bin/builder" --config "$cache/builder-config.yaml" --ldflags="-s -w" >&2)
test -x "$binary"
echo "$binary"
