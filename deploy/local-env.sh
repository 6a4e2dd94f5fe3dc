# Sourced by the local scripts: export the development defaults from deploy/env.local for every
# variable the environment does not already set (what the caller set always wins). `local_defaults
# FILE` does the same for another file (deploy/env.local-chain: the local dev chain's settings).
local_defaults() {
  local key value
  while IFS='=' read -r key value; do
    [[ -z "$key" || "$key" == \#* ]] && continue
    [[ -z "${!key:-}" ]] && export "$key=$value"
  done <"$1"
}
local_defaults deploy/env.local
