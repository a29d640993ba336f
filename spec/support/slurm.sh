#!/usr/bin/env bash
# A single-node Slurm for the specs (no systemd): munged, slurmctld and slurmd started directly,
# every file under DIR, ports of their own; `down` stops only the daemons `up` started, by PID.
#   spec/support/slurm.sh up DIR      -> prints the SLURM_CONF path; exit 3: cannot (not root, no packages)
#   spec/support/slurm.sh down DIR
set -u
cmd=${1:?up|down}; dir=${2:?DIR}
if [ "$cmd" = down ]; then
    for p in slurmd slurmctld munged; do
        [ -s "$dir/$p.pid" ] && kill "$(cat "$dir/$p.pid")" 2>/dev/null
    done
    sleep 0.5
    for p in slurmd slurmctld munged; do
        [ -s "$dir/$p.pid" ] && kill -9 "$(cat "$dir/$p.pid")" 2>/dev/null; rm -f "$dir/$p.pid"
    done
    exit 0
fi
[ "$(id -u)" = 0 ] || { echo "not root: a Slurm cannot be started here" >&2; exit 3; }
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
   || ! command -v sbatch >/dev/null; then
    if command -v apt-get >/dev/null; then
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge; } >"$dir.apt.log" 2>&1 \
            || { echo "installing Slurm failed (log: $dir.apt.log)" >&2; exit 3; }
    else
        echo "no Slurm packages and no apt-get" >&2; exit 3
    fi
fi
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chmod 700 "$dir/munge"
host=$(hostname -s)
cpus=$(nproc)
# ports of this instance: two free ones above 20000 (a second Slurm on the machine keeps its own)
base=$(( 20000 + ($$ % 2000) * 2 ))
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$dir/munge/munge.key"
munged -F -f --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" --pid-file="$dir/munge/munged.pid" \
    --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed" </dev/null >"$dir/munged.out" 2>&1 &
echo $! > "$dir/munged.pid"
cat > "$dir/slurm.conf" <<CONF
ClusterName=cuasync
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
MinJobAge=600
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pidfile
SlurmdPidFile=$dir/slurmd.pidfile
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$dir/slurm.conf"
for i in $(seq 50); do [ -S "$dir/munge/munge.sock" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$dir/slurmctld.out" 2>&1 &
echo $! > "$dir/slurmctld.pid"
slurmd -D -f "$SLURM_CONF" </dev/null >"$dir/slurmd.out" 2>&1 &
echo $! > "$dir/slurmd.pid"
for i in $(seq 100); do
    if sinfo -h -o %T 2>/dev/null | grep -q -E '^(idle|mixed|allocated)'; then echo "$SLURM_CONF"; exit 0; fi
    sleep 0.2
done
echo "Slurm did not come up in 20 s: $(tail -3 "$dir/slurmctld.log" "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')" >&2
"$0" down "$dir"
exit 3
