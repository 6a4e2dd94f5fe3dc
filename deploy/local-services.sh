#!/usr/bin/env bash
# Make sure the local PostgreSQL and Redis are up (starting them when installed but stopped) and that
# the development database exists. Says plainly what is missing instead of failing later.
set -o errexit -o pipefail -o nounset

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; }

if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n 1)" main start || true
    for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  fi
  pg_up || { echo "PostgreSQL is not running on 127.0.0.1:5432 and could not be started: install it (apt-get install postgresql) or start it" >&2; exit 1; }
fi

if ! redis_up; then
  if command -v redis-server >/dev/null; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 1 30); do redis_up && break; sleep 1; done
  fi
  redis_up || { echo "Redis is not running on 127.0.0.1:6379 and could not be started: install it (apt-get install redis-server) or start it" >&2; exit 1; }
fi

db_user="${DWS_LOCAL_DB_USER:-postgres}"
if ! psql -h 127.0.0.1 -U "$db_user" -Atc "select 1 from pg_database where datname='dws'" postgres 2>/dev/null | grep -q 1; then
  createdb -h 127.0.0.1 -U "$db_user" dws && echo "created database dws"
fi
