# Sourced by the local scripts: export the development defaults from deploy/env.local for every
# variable the environment does not already set (what the caller set always wins).
while IFS='=' read -r key value; do
  [[ -z "$key" || "$key" == \#* ]] && continue
  [[ -z "${!key:-}" ]] && export "$key=$value"
done < deploy/env.local
