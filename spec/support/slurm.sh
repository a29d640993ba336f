#!/usr/bin/env bash
# A single-node Slurm for the specs: the recipe of docs/sweeps.md ("A single-node Slurm"). Its
# ```sh slurm-install, slurm-up and slurm-down blocks are read from the page and run as they are,
# with a DIR and ports of this instance (a second Slurm on the machine keeps its own): what the
# page tells a user is what the Slurm specs run. No systemd; `down` stops only the daemons `up`
# started, by PID.
#   spec/support/slurm.sh up DIR      -> prints the SLURM_CONF path; exit 3: cannot (not root, no packages, not up)
#   spec/support/slurm.sh down DIR
#   spec/support/slurm.sh block NAME  -> prints the page's block slurm-NAME (exit 4: the page has none)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
page=$root/docs/sweeps.md
block() {
    local text
    text=$(awk -v open='```sh slurm-'"$1" '$0 == open { on = 1; next } on && /^```/ { exit } on { print }' "$page")
    [ -n "$text" ] || { echo "docs/sweeps.md has no \`\`\`sh slurm-$1 block" >&2; return 4; }
    printf '%s\n' "$text"
}
cmd=${1:?up|down|block}
if [ "$cmd" = block ]; then block "${2:?NAME}"; exit; fi
dir=${2:?DIR}
export DIR=$dir
if [ "$cmd" = down ]; then
    down=$(block down) || exit 4
    bash -c "$down"
    exit 0
fi
[ "$(id -u)" = 0 ] || { echo "not root: a Slurm cannot be started here" >&2; exit 3; }
install=$(block install) && up=$(block up) && block down >/dev/null || exit 3
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
   || ! command -v sbatch >/dev/null; then
    if command -v apt-get >/dev/null; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive bash -c "$install"; } >"$dir.apt.log" 2>&1 \
            || { echo "installing Slurm failed (log: $dir.apt.log)" >&2; exit 3; }
    else
        echo "no Slurm packages and no apt-get" >&2; exit 3
    fi
fi
# ports of this instance: two free ones above 20000. No GPU as gres: the specs pin the refusal of
# the default --gpus-per-task 1 by a cluster that offers none (slurm_spec, defect 8).
export PORT=$(( 20000 + ($$ % 2000) * 2 )) GPUS=0
if bash -c "$up" >"$dir.up.log" 2>&1; then
    echo "$dir/slurm.conf"
    exit 0
fi
echo "Slurm did not come up in 20 s: $(tail -3 "$dir.up.log" "$dir/slurmctld.log" "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')" >&2
"$0" down "$dir"
exit 3
