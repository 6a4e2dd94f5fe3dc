#!/usr/bin/env bash
# API benchmark: GET /user/data/{address} (a donor with 50 donations) and GET /donation/data under
# gunicorn against a separate database holding 1,000,000 donations; wrk at 32 connections.
#
#   bench/api_load.sh            # (re)load the bench database, then measure
#   SKIP_LOAD=1 bench/api_load.sh  # measure against the already loaded database
#
# Needs wrk (apt-get install wrk). Uses port ${BENCH_PORT:-18750} and the database dws_api_bench.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

BENCH_DB=${BENCH_DB:-dws_api_bench}
PORT=${BENCH_PORT:-18750}
WORKERS=${BENCH_WORKERS:-2}
DURATION=${BENCH_DURATION:-20s}
DONOR=0x00000000000000000000000000000000000b0b50

# Development defaults for the chain-side variables; production-like web settings.
source deploy/local-env.sh
export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$BENCH_DB"
export REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/13}
export DJANGO_DEBUG=false DJANGO_SETTINGS_MODULE=bench.settings DWS_LOG_LEVEL=WARNING
export ETH_RPC_URL=${ETH_RPC_URL:-http://127.0.0.1:8545}

if [[ -z "${SKIP_LOAD:-}" ]]; then
  psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $BENCH_DB" -c "CREATE DATABASE $BENCH_DB"
  .venv/bin/python manage.py migrate -v 0
  time psql -h 127.0.0.1 -U postgres -d "$BENCH_DB" -q -f bench/load_donations.sql
fi

.venv/bin/gunicorn dws_project.wsgi --bind "127.0.0.1:$PORT" --workers "$WORKERS" --log-level warning &
server=$!
trap 'kill -TERM $server; wait $server || true' EXIT
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/live" >/dev/null && break; sleep 0.2; done

echo "load before measuring: $(uptime)"
curl -sf "http://127.0.0.1:$PORT/user/data/$DONOR" | python3 -c \
  'import json,sys; b=json.load(sys.stdin); print("user/data donations on the page:", len(b["donations"]))'
for path in "/user/data/$DONOR" "/donation/data"; do
  wrk -t2 -c32 -d5s "http://127.0.0.1:$PORT$path" >/dev/null  # warm-up
  echo "== GET $path (wrk -t2 -c32 -d$DURATION, gunicorn $WORKERS sync workers)"
  wrk -t2 -c32 -d"$DURATION" --latency "http://127.0.0.1:$PORT$path"
done
