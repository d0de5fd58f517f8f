#!/usr/bin/env bash
# A throwaway single-node Slurm cluster (munged + slurmctld + slurmd on this host) living entirely
# under DIR, for tests of the Slurm study backend.
#
#   cluster.sh up DIR [--sacct]  install what is missing, configure, start, wait until the node is
#                                idle; prints the `export SLURM_CONF=...` line clients need
#   cluster.sh down DIR          stop everything `up DIR` started, jobs included
#
# sacct needs slurmdbd, and slurmdbd needs MariaDB/MySQL (Slurm 22.05 has no file-based accounting
# storage; jobcomp/filetxt + `sacct -c` lists raw job ids without array indices). Without --sacct
# (the default, lighter) sacct fails with "Slurm accounting storage is disabled" and job states
# come from `squeue --states=all` / `scontrol show job`, which keep finished jobs for MinJobAge.
# --sacct adds mariadb-server + slurmdbd (another ~22 s of install, ~2 s of start).
#
# Runs as root (the daemons and the jobs run as root; no systemd, no cgroups). Nothing under
# /etc/slurm, /etc/munge, /etc/mysql or /run is used: config, munge key and socket, database,
# state, spool, logs and pid files all live in DIR, and the ports are the first free ones from
# 16817, so a real Slurm, munge or MariaDB on the machine is left alone.
# Exits 77 with "skipped: <reason>" on stderr when it cannot install or run (not root, no apt).
set -euo pipefail

usage() { echo "usage: $0 up DIR [--sacct] | down DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
cmd=$1 sacct=""
case ${3:-} in --sacct) sacct=1 ;; "") ;; *) usage ;; esac
mkdir -p "$2"
dir=$(cd "$2" && pwd)
conf=$dir/etc/slurm.conf
timeout_s=${SLURM_UP_TIMEOUT:-60}

skip() { echo "skipped: $*" >&2; exit 77; }
die() { echo "cluster.sh: $*" >&2; exit 1; }

install_packages() {
  local pkgs=(slurm-wlm munge) missing=() p
  [ -n "$sacct" ] && pkgs+=(slurmdbd mariadb-server)
  for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return
  command -v apt-get >/dev/null || skip "${missing[*]} missing and no apt-get to install them"
  echo "cluster.sh: installing ${missing[*]}" >&2
  # The packages' postinst would start the system's munged/slurmd/mariadb (invoke-rc.d). Deny that
  # through a temporary policy-rc.d unless one exists already (Docker images ship one denying all).
  local policy=/usr/sbin/policy-rc.d own_policy="" rc=0
  if [ ! -e $policy ]; then
    printf '#!/bin/sh\nexit 101\n' >$policy && chmod 755 $policy && own_policy=1
  fi
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } || rc=$?
  [ -z "$own_policy" ] || rm -f $policy
  # No network (an offline GPU host): the test cannot have its cluster here; CI installs them.
  [ $rc -eq 0 ] || skip "apt-get install ${missing[*]} failed (offline?)"
}

# A port nobody listens on yet, from $1 up.
free_port() {
  local p=$1
  while (exec 3<>/dev/tcp/127.0.0.1/"$p") 2>/dev/null; do p=$((p + 1)); done
  echo "$p"
}

# Waits until command "$@" succeeds; $1 names what is awaited in the error.
wait_for() {
  local what=$1 t0=$SECONDS; shift
  until "$@" >/dev/null 2>&1; do
    [ $((SECONDS - t0)) -lt "$timeout_s" ] || die "$what not up after ${timeout_s}s; see $dir/log/"
    sleep 0.2
  done
}
listening() { (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; }
node_idle() {
  local d
  for d in slurmctld slurmd; do  # fail fast when one dies (a pid file appears once it runs)
    [ ! -f "$dir/run/$d.pid" ] || pid_alive "$dir/run/$d.pid" || die "$d died; see $dir/log/$d.log"
  done
  [ "$(sinfo -h -N -o %t | head -1)" = idle ]
}

write_config() {
  mkdir -p "$dir"/{etc,munge,state,spool,log,run}
  chmod 700 "$dir/munge"
  mungekey --create --keyfile="$dir/munge/munge.key"
  local host node
  host=$(hostname -s)
  # slurmd -C reports this machine's CPUs, sockets, cores, threads and RealMemory as a NodeName line.
  node=$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$host/")
  ctld_port=$(free_port 16817)
  slurmd_port=$(free_port $((ctld_port + 1)))
  dbd_port=$(free_port $((slurmd_port + 1)))
  db_port=$(free_port $((dbd_port + 1)))
  : >"$dir/etc/plugstack.conf"
  cat >"$conf" <<EOF
ClusterName=saddlescope-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# Clients and all daemons find our munged through this socket. cred_expire is also how long a
# requeued job waits before it may start again (default 120 s).
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
PlugStackConfig=$dir/etc/plugstack.conf
MailProg=/bin/true
# No cgroups: containers rarely allow them, and the tests need no resource enforcement.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerType=sched/backfill
# A job whose begin time passes (a requeued one) starts at the next periodic pass (default 60 s).
SchedulerParameters=sched_interval=2,bf_interval=2
# Finished jobs stay visible to squeue/scontrol for an hour (default 300 s).
MinJobAge=3600
# SIGTERM to SIGKILL on cancel, requeue or time limit (default 30 s).
KillWait=5
$node State=UNKNOWN NodeAddr=127.0.0.1
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  if [ -z "$sacct" ]; then
    echo "AccountingStorageType=accounting_storage/none" >>"$conf"
    return
  fi
  cat >>"$conf" <<EOF
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
# The munge socket for talking to slurmdbd (AuthInfo covers only the cluster itself).
AccountingStoragePass=$dir/munge/munge.socket
EOF
  # slurmdbd reads slurmdbd.conf next to SLURM_CONF, and only if it is private to SlurmUser.
  cat >"$dir/etc/slurmdbd.conf" <<EOF
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
EOF
  chmod 600 "$dir/etc/slurmdbd.conf"
  # Small InnoDB files: the default redo log alone is 96 MB.
  cat >"$dir/etc/my.cnf" <<EOF
[mysqld]
datadir=$dir/db
socket=$dir/run/mysqld.sock
port=$db_port
bind-address=127.0.0.1
pid-file=$dir/run/mariadbd.pid
log-error=$dir/log/mariadbd.log
user=root
innodb_log_file_size=4M
innodb_buffer_pool_size=32M
EOF
}

# Alive and not a zombie: a container's pid 1 may be slow to reap the daemons, or never reap them.
alive() { local st; st=$(sed -E 's/.*\) (.) .*/\1/' "/proc/$1/stat" 2>/dev/null) && [ "$st" != Z ]; }
pid_alive() { [ -f "$1" ] && alive "$(cat "$1")"; }

up() {
  [ "$(id -u)" -eq 0 ] || skip "needs root to install and run munged, slurmctld and slurmd"
  install_packages
  for f in "$dir"/run/*.pid "$dir"/munge/munged.pid; do
    pid_alive "$f" && die "a cluster is already running in $dir (cluster.sh down $dir first)"
  done
  write_config
  # A failed start leaves nothing running either.
  trap 'rc=$?; [ $rc -eq 0 ] || down; exit $rc' EXIT
  export SLURM_CONF=$conf
  # --force: munged wants the socket's directories open to all users (they need not be: every
  # client here is root) and refuses otherwise; forced, it only warns.
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed" || die "munged failed; see $dir/log/munged.log"
  if [ -n "$sacct" ]; then
    mariadb-install-db --defaults-file="$dir/etc/my.cnf" --auth-root-authentication-method=normal \
      --skip-test-db >"$dir/log/mariadb-install-db.log" 2>&1 || die "mariadb-install-db failed"
    # mariadbd does not daemonize: detach it from this shell and its output.
    setsid mariadbd --defaults-file="$dir/etc/my.cnf" </dev/null >>"$dir/log/mariadbd.log" 2>&1 &
    wait_for mariadbd mariadb-admin --socket="$dir/run/mysqld.sock" -uroot ping
    slurmdbd || die "slurmdbd failed; see $dir/log/slurmdbd.log"
    wait_for slurmdbd listening "$dbd_port"
  fi
  # -i: a fresh cluster, no state to recover.
  slurmctld -i -f "$conf" || die "slurmctld failed; see $dir/log/slurmctld.log"
  slurmd -f "$conf" || die "slurmd failed; see $dir/log/slurmd.log"
  wait_for "an idle node" node_idle
  echo "export SLURM_CONF=$conf"
}

# Sends TERM to the process in pid file $1, waits up to 10 s, then KILL.
stop_pid() {
  local f=$1 pid
  [ -f "$f" ] || return 0
  pid=$(cat "$f")
  if alive "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do alive "$pid" || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

# Our slurmstepds and the jobs' processes, orphans included: both carry our SLURM_CONF, and only
# job processes carry SLURM_JOB_ID (the caller's shell may have our SLURM_CONF too). This script
# and its ancestors are spared, in case the test itself runs inside some Slurm job.
job_pids() {
  local p a=$BASHPID mine=" "
  while [ "$a" -gt 1 ]; do mine+="$a "; a=$(sed -E 's/.*\) . ([0-9]+) .*/\1/' "/proc/$a/stat"); done
  grep -lxzF "SLURM_CONF=$conf" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | while read -r p; do
    [[ $mine == *" $p "* ]] && continue
    if [ "$(cat "/proc/$p/comm" 2>/dev/null)" = slurmstepd ] ||
       grep -qzE '^SLURM_JOB_ID=' "/proc/$p/environ" 2>/dev/null; then
      echo "$p"
    fi
  done
}

down() {
  # The jobs first, outright: a teardown has no use for their grace period (KillWait).
  local pids
  mapfile -t pids < <(job_pids)
  [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
  stop_pid "$dir/run/slurmd.pid"
  stop_pid "$dir/run/slurmctld.pid"
  stop_pid "$dir/run/slurmdbd.pid"
  stop_pid "$dir/run/mariadbd.pid"
  stop_pid "$dir/munge/munged.pid"
}

case $cmd in
  up) up ;;
  down) down ;;
  *) usage ;;
esac
