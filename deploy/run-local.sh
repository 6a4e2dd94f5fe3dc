#!/usr/bin/env bash
# `make run`: the whole system on this machine. Variables already set in the environment win over
# the development defaults in deploy/env.local. Without ETH_RPC_URL a local anvil chain is started.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

while IFS='=' read -r key value; do
  [[ -z "$key" || "$key" == \#* ]] && continue
  [[ -z "${!key:-}" ]] && export "$key=$value"
done < deploy/env.local

mkdir -p var/log
pids=()
cleanup() {
  trap - EXIT INT TERM
  echo "stopping: ${pids[*]:-}"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap cleanup EXIT INT TERM

if [[ -z "${ETH_RPC_URL:-}" ]]; then
  port="${DWS_LOCAL_CHAIN_PORT:-8545}"
  echo "ETH_RPC_URL is not set: starting a local anvil dev chain on 127.0.0.1:$port (log: var/log/anvil.log)"
  node_modules/.bin/anvil --host 127.0.0.1 --port "$port" --block-time 2 --slots-in-an-epoch 1 \
    >var/log/anvil.log 2>&1 &
  pids+=($!)
  export ETH_RPC_URL="http://127.0.0.1:$port"
  for _ in $(seq 1 50); do
    curl -sf -X POST -H 'content-type: application/json' \
      --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "$ETH_RPC_URL" >/dev/null && break
    sleep 0.2
  done
  if [[ -x deploy/dev-chain-setup.sh ]]; then deploy/dev-chain-setup.sh; fi
fi

.venv/bin/python manage.py migrate --noinput

.venv/bin/gunicorn -c deploy/gunicorn.conf.py dws_project.wsgi &
pids+=($!)
.venv/bin/celery -A dws_project worker --loglevel INFO --concurrency 2 &
pids+=($!)
.venv/bin/celery -A dws_project beat --loglevel INFO --schedule var/celerybeat-schedule &
pids+=($!)

echo "dws is running: http://127.0.0.1:${DWS_WEB_PORT:-8000}/  (Ctrl-C stops everything)"
# Stop everything as soon as one process dies, so a broken start is not mistaken for a running system.
wait -n
echo "a process exited; shutting down" >&2
exit 1
