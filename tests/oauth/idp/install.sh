#!/usr/bin/env bash
# Installs the OpenID provider the OAuth tests run (oidc-provider) into tests/oauth/idp/node_modules, exactly as
# package-lock.json records it. `npm ci` never resolves versions: it installs the lock file or fails.
# oidc-provider asks for Node 22 but runs on Node 20 (a warning at start).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v npm >/dev/null 2>&1; then
  echo "tests/oauth/idp/install.sh: npm is required (Node 20 or newer)" >&2
  exit 1
fi
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
test -f node_modules/oidc-provider/package.json
echo "tests/oauth/idp: node $(node --version), oidc-provider $(node -p "require('./node_modules/oidc-provider/package.json').version")"
