#!/usr/bin/env bash
# A lively demo next to a running `make run` (local dev chain): dev donors send ETH/USDT/USDC donations.
# Arguments go to `manage.py simulate_donations` (e.g. --count 20 --interval 5). Same defaults as
# deploy/run-local.sh (deploy/env.local, and deploy/env.local-chain for its local chain); the command
# itself refuses any chain that is not a development chain.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

source deploy/local-env.sh
# Without ETH_RPC_URL, `make run` started its local chain: the same port and chain settings it uses.
if [[ -z "${ETH_RPC_URL:-}" ]]; then
  export ETH_RPC_URL="http://127.0.0.1:${DWS_LOCAL_CHAIN_PORT:-8545}"
  local_defaults deploy/env.local-chain
fi

exec .venv/bin/python manage.py simulate_donations "$@"
