#!/usr/bin/env bash
# A lively demo next to a running `make run` (local dev chain): dev donors send ETH/USDT/USDC donations.
# Arguments go to `manage.py simulate_donations` (e.g. --count 20 --interval 5). Same defaults as
# deploy/run-local.sh; the command itself refuses any chain that is not a development chain.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

source deploy/local-env.sh
export ETH_RPC_URL="${ETH_RPC_URL:-http://127.0.0.1:${DWS_LOCAL_CHAIN_PORT:-8545}}"

exec .venv/bin/python manage.py simulate_donations "$@"
