#!/usr/bin/env bash
# The page's browser tests drive Debian's Chromium through Playwright (never `playwright install`,
# which downloads a browser build of its own). Install it from Debian when missing and we are root.
set -o errexit -o pipefail -o nounset
command -v chromium >/dev/null && exit 0
if [[ "$(id -u)" != 0 ]]; then
  echo "chromium is missing: install it with 'sudo apt-get install chromium' (the browser tests need it)" >&2
  exit 1
fi
echo "installing chromium for the browser tests"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
