#!/usr/bin/env bash
# Installs what the headless Neovim test (tests/nvim/) needs, idempotently: Debian's neovim
# (0.7.2 on Debian 12), as root or through sudo. A second run only checks and returns at once.
# The VS Code end-to-end set-up (tests/e2e/setup.sh) may run apt at the same time under
# `make -j`: apt's locks are waited for, not failed on.
set -euo pipefail

if command -v nvim >/dev/null 2>&1; then
  echo "nvim setup: $(nvim --version | head -n 1) ready"
  exit 0
fi

SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
APT=($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -q -o DPkg::Lock::Timeout=600)

# The package lists: fetched only when they do not know neovim yet. `update` takes the lists'
# lock, which DPkg::Lock::Timeout does not cover: another apt holding it gets a few tries.
if ! apt-cache policy neovim 2>/dev/null | grep -q 'Candidate: [0-9]'; then
  for attempt in 1 2 3 4 5 6; do
    if "${APT[@]}" update; then break; fi
    [ "$attempt" = 6 ] && { echo "nvim setup: apt-get update failed" >&2; exit 1; }
    echo "nvim setup: apt busy, trying again in 10 s"; sleep 10
  done
fi
echo "nvim setup: apt-get install neovim"
"${APT[@]}" install -y neovim
echo "nvim setup: $(nvim --version | head -n 1) ready"
