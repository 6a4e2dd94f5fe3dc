#!/usr/bin/env bash
# `make run`: the whole system on this machine. Variables already set in the environment win over
# the development defaults in deploy/env.local. Without ETH_RPC_URL two local anvil chains are started:
# chain eth (chain id 31337) and a local rollup (chain id 1337, its own coins), one campaign across both.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

source deploy/local-env.sh

mkdir -p var/log
pids=()
cleanup() {
  trap - EXIT INT TERM
  echo "stopping: ${pids[*]:-}"
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait || true
}
trap cleanup EXIT INT TERM

# A local anvil chain: a block every 2 s, `finalized` two blocks behind the head, so a donation is
# confirmed within about a minute (the finalized crawler's cadence). Its chain is kept in STATE between
# runs, as the dev database keeps its donations and cursors; delete both to start over (see the README).
# start_anvil PORT STATE LOG [anvil arguments...]
start_anvil() {
  local port="$1" state="$2" log="$3"
  shift 3
  node_modules/.bin/anvil --host 127.0.0.1 --port "$port" --block-time 2 --slots-in-an-epoch 1 \
    --state "$state" --state-interval 30 "$@" >"$log" 2>&1 &
  pids+=($!)
}

wait_for_node() {
  for _ in $(seq 1 50); do
    curl -sf -X POST -H 'content-type: application/json' \
      --data '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' "$1" >/dev/null && return 0
    sleep 0.2
  done
  echo "no answer from the local chain at $1" >&2
  return 1
}

dev_chain=""
rollup=""
if [[ -z "${ETH_RPC_URL:-}" ]]; then
  dev_chain=yes
  own_rollup_url="${DWS_ROLLUP_RPC_URL:-}"
  # Exported here, in the parent, so web, worker, beat and every command below see the same values
  # (and deploy/simulate-donations.sh, in another shell, reads the same file and ports).
  local_chains
  port="${DWS_LOCAL_CHAIN_PORT:-8545}"
  echo "ETH_RPC_URL is not set: starting a local anvil dev chain on 127.0.0.1:$port (log: var/log/anvil.log)"
  start_anvil "$port" var/anvil-state.json var/log/anvil.log
  if local_rollup && [[ -z "$own_rollup_url" ]]; then
    rollup=yes
    rollup_port="${DWS_LOCAL_ROLLUP_PORT:-8546}"
    echo "and a second one as a local rollup (chain id $DWS_ROLLUP_CHAIN_ID) on 127.0.0.1:$rollup_port" \
      "(log: var/log/anvil-rollup.log)"
    start_anvil "$rollup_port" var/anvil-rollup-state.json var/log/anvil-rollup.log --chain-id "$DWS_ROLLUP_CHAIN_ID"
    wait_for_node "$DWS_ROLLUP_RPC_URL"
  fi
  wait_for_node "$ETH_RPC_URL"
  if [[ -x deploy/dev-chain-setup.sh ]]; then deploy/dev-chain-setup.sh; fi
fi

.venv/bin/python manage.py migrate --noinput
# The first ETH price at once (the dev price on the dev chain), not a minute after beat starts.
if [[ -n "$dev_chain" ]]; then .venv/bin/python manage.py fetch_prices --once; fi

.venv/bin/gunicorn -c deploy/gunicorn.conf.py dws_project.wsgi &
web_pid=$!
pids+=("$web_pid")
# One worker per queue, as in production: the minute price never waits behind a crawl, and a webhook
# receiver never holds a crawler. Each has its own heartbeat directory (`manage.py probe worker` with
# DWS_HEARTBEAT_DIR=var/heartbeat/<queue>). The crawlers' worker has a process per chain for its head
# follower (it holds one for minutes at a time) and two beside, so the finalized crawler never waits for one.
chain_count=$(tr ',' '\n' <<<"${DWS_CHAINS:-eth}" | grep -c .)
DWS_HEARTBEAT_DIR="$PWD/var/heartbeat/crawlers" .venv/bin/celery -A dws_project worker --loglevel INFO \
  --queues crawlers,celery --hostname crawlers@%h --concurrency "$((chain_count + 2))" &
pids+=($!)
DWS_HEARTBEAT_DIR="$PWD/var/heartbeat/prices" .venv/bin/celery -A dws_project worker --loglevel INFO \
  --queues prices --hostname prices@%h --concurrency 1 &
pids+=($!)
DWS_HEARTBEAT_DIR="$PWD/var/heartbeat/webhooks" .venv/bin/celery -A dws_project worker --loglevel INFO \
  --queues webhooks --hostname webhooks@%h --concurrency 1 &
pids+=($!)
DWS_HEARTBEAT_DIR="$PWD/var/heartbeat/beat" .venv/bin/celery -A dws_project beat --loglevel INFO \
  --schedule var/celerybeat-schedule &
pids+=($!)

wait_for_web "http://127.0.0.1:${DWS_WEB_PORT:-8000}/live" "$web_pid"
wait_for_networks "http://127.0.0.1:${DWS_WEB_PORT:-8000}/"
echo "dws is running: http://127.0.0.1:${DWS_WEB_PORT:-8000}/  (Ctrl-C stops everything)"
if [[ -n "$dev_chain" ]]; then
  cat <<BANNER
  dev chain:        chain id $DWS_CHAIN_ID at $ETH_RPC_URL (anvil; not real money)
BANNER
  if [[ -n "$rollup" ]]; then
    cat <<BANNER
  local rollup:     "$DWS_ROLLUP_LABEL", chain id $DWS_ROLLUP_CHAIN_ID at $DWS_ROLLUP_RPC_URL (a second anvil; its own
                    USDC/USDT: $DWS_ROLLUP_STABLE_COINS)
BANNER
  fi
  cat <<BANNER
  donation address: $DWS_DONATION_ADDRESS
  ETH price:        $DWS_DEV_ETH_PRICE USD (DWS_DEV_ETH_PRICE, dev chains only)
  try it:           import anvil's public dev account #1, 0x70997970C51812dc3A010C7d01b50e0d17dc79C8, into
                    MetaMask with the private key 0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d
                    (10,000 ETH and 1,000,000 test USDT/USDC on each chain; anvil's published key, worthless
                    elsewhere). Pick a network on the page: MetaMask is asked to add it (or add it yourself:
                    RPC $ETH_RPC_URL, chain id $DWS_CHAIN_ID, symbol ETH${rollup:+; and for the rollup RPC $DWS_ROLLUP_RPC_URL, chain id $DWS_ROLLUP_CHAIN_ID})
  lively demo:      deploy/simulate-donations.sh --count 20 --interval 5   (in another shell)
BANNER
fi
# Stop everything as soon as one process dies, so a broken start is not mistaken for a running system.
wait -n
echo "a process exited; shutting down" >&2
exit 1
