#!/usr/bin/env bash
# Lighthouse (npm `lighthouse` 12.2.3, run with the local Chromium) against the donation page at phone
# and desktop settings: performance, accessibility and best practices (issue #23; results in
# docs/BENCHMARKS.md). Not part of `make test`.
#
#   make run                       # in another shell: the whole local system
#   bench/lighthouse.sh [URL]      # default http://127.0.0.1:${DWS_WEB_PORT:-8000}/
#
# Lighthouse is a bench-local npm package (bench/lighthouse/package.json and its lock): its ~110 MB
# stay out of the root package.json, so `npm ci` for `make test` and CI stays small. The first run
# installs it with `npm ci`. The reports go to var/lighthouse/ (phone.json, desktop.json); the script
# exits non-zero when a score is below its floor (accessibility and best practices 95, performance 90).
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

URL=${1:-http://127.0.0.1:${DWS_WEB_PORT:-8000}/}
CHROMIUM=${DWS_CHROMIUM:-/usr/bin/chromium}
OUT=var/lighthouse
LIGHTHOUSE=bench/lighthouse/node_modules/.bin/lighthouse

[[ -x $LIGHTHOUSE ]] || (cd bench/lighthouse && npm ci --no-audit --no-fund)
mkdir -p "$OUT"

run() { # run NAME [extra lighthouse flags...]
  local name=$1
  shift
  "$LIGHTHOUSE" "$URL" --quiet --chrome-path="$CHROMIUM" \
    --chrome-flags="--headless=new --no-sandbox --disable-gpu --disable-extensions" \
    --only-categories=performance,accessibility,best-practices \
    --output=json --output-path="$OUT/$name.json" "$@"
}

# Phone: Lighthouse's default mobile run (a mid-range phone, simulated slow 4G and a 4x slower CPU).
run phone
# Desktop: Lighthouse's desktop preset (1350x940, simulated cable connection).
run desktop --preset=desktop

node bench/lighthouse/scores.mjs "$OUT/phone.json" "$OUT/desktop.json"
