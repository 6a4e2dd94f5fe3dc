#!/usr/bin/env bash
# Availability under attack: the page (GET /) and GET /donation/data measured with wrk from many
# visitors, first alone, then while one client hammers the admin login and a signed endpoint at its
# rate limit (bench/hammer.py). gunicorn with the production worker count (3 sync workers), the
# production rate limits and login budgets; the attacker is inside DWS_ADMIN_ALLOWED_NETWORKS (the
# worst case: from outside, the admin answers 404 before any work).
#
#   bench/hardening_load.sh            # BENCH_DURATION=20s by default
#
# Needs wrk. Uses port ${BENCH_PORT:-18760}, the database dws_hardening_bench and Redis db 12.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

BENCH_DB=${BENCH_DB:-dws_hardening_bench}
PORT=${BENCH_PORT:-18760}
WORKERS=${BENCH_WORKERS:-3}
DURATION=${BENCH_DURATION:-15s}
CONNECTIONS=${BENCH_CONNECTIONS:-16}
BASE="http://127.0.0.1:$PORT"

source deploy/local-env.sh
export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$BENCH_DB"
export REDIS_URL=${BENCH_REDIS_URL:-redis://127.0.0.1:6379/12}
export DJANGO_DEBUG=false DWS_HTTPS=off DJANGO_SETTINGS_MODULE=dws_project.settings DWS_LOG_LEVEL=ERROR
export ETH_RPC_URL=${ETH_RPC_URL:-http://127.0.0.1:8545}
# wrk's visitors and the attacker arrive through "a proxy" on 127.0.0.1 that names them.
export DWS_TRUSTED_PROXIES=127.0.0.1/32
export DWS_ADMIN_ALLOWED_NETWORKS=127.0.0.0/8,203.0.113.0/24

psql -h 127.0.0.1 -U postgres -d postgres -qc "DROP DATABASE IF EXISTS $BENCH_DB" -c "CREATE DATABASE $BENCH_DB"
.venv/bin/python manage.py migrate -v 0
redis-cli -u "$REDIS_URL" flushdb >/dev/null
# The account the attacker guesses passwords for (hashing a wrong password costs the same as a right one).
.venv/bin/python manage.py shell -c \
  "from django.contrib.auth.models import User; User.objects.create_superuser('admin', 'a@example.org', 'not-guessed-9f8e')"

.venv/bin/gunicorn dws_project.wsgi --bind "127.0.0.1:$PORT" --workers "$WORKERS" --log-level warning 2>/tmp/dws-hardening-bench-web.log &
server=$!
trap 'kill -TERM $server; wait $server || true' EXIT
for _ in $(seq 1 100); do curl -sf "$BASE/live" >/dev/null && break; sleep 0.2; done

measure() {  # label path
  redis-cli -u "$REDIS_URL" --scan --pattern 'dws:ratelimit:*' | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null
  local rps
  rps=$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" -s bench/visitors.lua "$BASE$2" | awk '/Requests\/sec/ {print $2}')
  echo "$1 GET $2: $rps req/s"
}

workers_cpu() {  # CPU seconds used so far by the gunicorn workers (children of the master)
  local ticks=0 pid
  for pid in $(pgrep -P "$server"); do
    ticks=$((ticks + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  echo "scale=2; $ticks / $(getconf CLK_TCK)" | bc
}

echo "load before measuring: $(uptime)"
# What the attack costs the web workers, independent of how busy the shared machine is: worker CPU
# seconds per second of attack, and per 1,000 requests of each page.
redis-cli -u "$REDIS_URL" flushdb >/dev/null
before=$(workers_cpu)
nice -n 19 .venv/bin/python bench/hammer.py "$BASE" --rate 50 --seconds 30 | sed 's/^/    /'
echo "attack alone: $(echo "scale=3; ($(workers_cpu) - $before) / 30" | bc) worker CPU s per s"
for path in "/" "/donation/data"; do
  redis-cli -u "$REDIS_URL" --scan --pattern 'dws:ratelimit:*' | xargs -r redis-cli -u "$REDIS_URL" del >/dev/null
  before=$(workers_cpu)
  done_requests=$(wrk -t2 -c"$CONNECTIONS" -d10s -s bench/visitors.lua "$BASE$path" | awk '/requests in/ {print $1}')
  echo "GET $path: $(echo "scale=2; ($(workers_cpu) - $before) * 1000 / $done_requests" | bc) worker CPU s per 1,000 requests"
done
wrk -t2 -c"$CONNECTIONS" -d5s -s bench/visitors.lua "$BASE/" >/dev/null  # warm-up
# Alternate alone / under attack, ROUNDS times per path: the machine is shared, so single runs are noisy.
for path in "/" "/donation/data"; do
  for round in $(seq 1 "${ROUNDS:-3}"); do
    measure "round $round alone:        " "$path"
    redis-cli -u "$REDIS_URL" flushdb >/dev/null
    # The attacker's own client runs niced: in the real attack it is on another machine.
    nice -n 19 .venv/bin/python bench/hammer.py "$BASE" --rate 50 --seconds 600 >"/tmp/dws-hammer-$$.txt" &
    attacker=$!
    sleep 3  # the attacker's burst is spent; it now runs at its rate limit
    measure "round $round under attack: " "$path"
    kill -TERM "$attacker"; wait "$attacker" || true
    sed 's/^/    /' "/tmp/dws-hammer-$$.txt"
  done
done
