# Sourced by the local scripts: export the development defaults from deploy/env.local for every
# variable the environment does not already set (what the caller set always wins). `local_defaults
# FILE` does the same for another file (deploy/env.local-chain: the local dev chains' settings).
local_defaults() {
  local key value
  while IFS='=' read -r key value; do
    [[ -z "$key" || "$key" == \#* ]] && continue
    [[ -z "${!key:-}" ]] && export "$key=$value"
  done <"$1"
}
local_defaults deploy/env.local

# `local_chains`: the local dev chains' settings (deploy/env.local-chain) and their URLs: chain eth on
# 127.0.0.1:$DWS_LOCAL_CHAIN_PORT (8545) and, while DWS_CHAINS lists it, the rollup on
# 127.0.0.1:$DWS_LOCAL_ROLLUP_PORT (8546). The page may hand each URL to a wallet that lacks the chain
# (DWS_*_WALLET_RPC_URL: a loopback node holds no key). For a caller without ETH_RPC_URL only.
local_chains() {
  export ETH_RPC_URL="http://127.0.0.1:${DWS_LOCAL_CHAIN_PORT:-8545}"
  local_defaults deploy/env.local-chain
  export DWS_ETH_WALLET_RPC_URL="${DWS_ETH_WALLET_RPC_URL:-$ETH_RPC_URL}"
  if local_rollup; then
    export DWS_ROLLUP_RPC_URL="${DWS_ROLLUP_RPC_URL:-http://127.0.0.1:${DWS_LOCAL_ROLLUP_PORT:-8546}}"
    export DWS_ROLLUP_WALLET_RPC_URL="${DWS_ROLLUP_WALLET_RPC_URL:-$DWS_ROLLUP_RPC_URL}"
  fi
}

# True while DWS_CHAINS lists the local rollup.
local_rollup() {
  [[ ",${DWS_CHAINS:-}," == *",rollup,"* ]]
}

# `wait_for_web URL PID`: until the web process answers URL (its /live), at most 60 s; fails at once if the
# process PID exits first. `make run` prints "dws is running" only after this, so the banner never points
# at a page that does not answer yet.
wait_for_web() {
  local url="$1" pid="$2"
  for _ in $(seq 1 300); do
    curl -sf -o /dev/null --max-time 2 "$url" && return 0
    kill -0 "$pid" 2>/dev/null || { echo "the web process exited before it answered $url" >&2; return 1; }
    sleep 0.2
  done
  echo "no answer from the web process at $url within 60 s" >&2
  return 1
}

# `wait_for_networks URL`: until the page at URL offers a network to donate on, at most 60 s. Chains sharing
# the donation address are offered once a worker has read its code on each (crawlers/runs/address_code.py,
# kept in PostgreSQL: unknown is never offered), which the crawlers' worker does as it starts.
wait_for_networks() {
  local url="$1"
  for _ in $(seq 1 300); do
    curl -sf --max-time 2 "$url" | grep -q 'data-chain="' && return 0
    sleep 0.2
  done
  echo "the page at $url offers no network yet: the crawlers' worker has not read the donation address on every chain" >&2
}
