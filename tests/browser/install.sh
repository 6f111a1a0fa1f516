#!/usr/bin/env bash
# Installs axe-core for the panel's browser tests into tests/browser/node_modules, exactly as package-lock.json
# records it (`npm ci` never resolves versions). Chromium and its driver come from Debian (.ci/run).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "tests/browser/install.sh: npm is required (Node 20 or newer)" >&2
  exit 1
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
test -f node_modules/axe-core/axe.min.js
echo "tests/browser: axe-core $(node -p "require('./node_modules/axe-core/package.json').version")"
