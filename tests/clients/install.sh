#!/usr/bin/env bash
# Installs the pinned client libraries (package.json + package-lock.json beside this script) into
# DIR/node_modules for the real-client end-to-end tests. Does nothing when DIR already holds this
# exact lock file's install. Fails loudly when Node.js or npm is missing: `./dev deps` installs them.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 DIR" >&2
  exit 2
fi
DIR=$1
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ERROR: '$tool' is not installed; the real-client tests need Node.js and npm" \
         "(run ./dev deps, or apt-get install nodejs npm)" >&2
    exit 1
  fi
done

mkdir -p "$DIR"
STAMP="$DIR/node_modules/.ingot-install-stamp"
if [[ -f "$STAMP" ]] && cmp -s "$STAMP" "$HERE/package-lock.json"; then
  exit 0
fi
cp "$HERE/package.json" "$HERE/package-lock.json" "$DIR/"
echo "installing client libraries into $DIR (npm ci)" >&2
npm ci --prefix "$DIR" --no-audit --no-fund --loglevel=error
cp "$HERE/package-lock.json" "$STAMP"
