#!/usr/bin/env bash
# A lively demo next to a running `make run` (local dev chains): dev donors send ETH/USDT/USDC donations,
# taking turns over the chains (eth and the local rollup). Arguments go to `manage.py simulate_donations`
# (e.g. --count 20 --interval 5). Same defaults as deploy/run-local.sh (deploy/env.local, and
# deploy/env.local-chain with the same ports for its local chains); the command itself refuses any chain
# that is not a development chain.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."

source deploy/local-env.sh
# Without ETH_RPC_URL, `make run` started its local chains: the same ports and chain settings it uses.
if [[ -z "${ETH_RPC_URL:-}" ]]; then
  local_chains
fi

exec .venv/bin/python manage.py simulate_donations "$@"
