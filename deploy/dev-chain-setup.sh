#!/usr/bin/env bash
# Called by deploy/run-local.sh after it started the local anvil chain: deploy the test USDT/USDC
# contracts at the addresses deploy/env.local configures and fund anvil's dev accounts with them.
# Refused by the command on any chain that is not a development chain.
set -o errexit -o pipefail -o nounset
cd "$(dirname "$0")/.."
exec .venv/bin/python manage.py dev_chain_setup
