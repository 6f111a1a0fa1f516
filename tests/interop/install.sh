#!/usr/bin/env bash
# Installs the pinned MCP clients the interop tests drive (the MCP Inspector CLI and the TypeScript SDK)
# into tests/interop/node_modules, exactly as package-lock.json records them.
#
# `npm ci` never resolves versions: it installs the lock file or fails. Install scripts are skipped: the only
# one (the Inspector's postinstall) builds its clients from a source checkout and does nothing for a published
# package. The Inspector asks for Node >= 22 but works on Node 20 (an EBADENGINE warning at install).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "tests/interop/install.sh: npm is required (Node 20 or newer)" >&2
  exit 1
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
test -x node_modules/.bin/mcp-inspector
test -f node_modules/@modelcontextprotocol/sdk/package.json
version() { node -p "JSON.parse(require('fs').readFileSync('node_modules/$1/package.json', 'utf8')).version"; }
echo "tests/interop: node $(node --version), inspector $(version @modelcontextprotocol/inspector), sdk $(version @modelcontextprotocol/sdk)"
