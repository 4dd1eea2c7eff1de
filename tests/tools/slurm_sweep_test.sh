#!/usr/bin/env bash
# A sweep submitted as a real Slurm array job: a single-node Slurm (Debian's slurmctld and
# slurmd, installed by tools/setup) started in a scratch folder, its four array tasks finding
# their slice with --shard auto; merged, their files are the unsharded sweep byte for byte.
# The cluster authenticates nothing (auth/none) and listens on ports of its own, so it needs
# neither munge nor root's system services, and it is shut down however the test ends.
#   tests/tools/slurm_sweep_test.sh IPUSIM     (from the source directory)
set -euo pipefail
ipusim="$(realpath "$1")"
dir="$(mktemp -d)"
export SLURM_CONF="$dir/slurm.conf"
stop() {
  scontrol shutdown >/dev/null 2>&1 || true
  for pid_file in "$dir"/slurmctld.pid "$dir"/slurmd.pid; do
    [[ -f "$pid_file" ]] && kill "$(cat "$pid_file")" 2>/dev/null || true
  done
  sleep 1
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 1' INT TERM

node="$(hostname -s)"
port=$((20000 + ($$ % 10000) * 2))
mkdir -p "$dir/state" "$dir/spool"
cat >"$SLURM_CONF" <<CONF
ClusterName=ipusimtest
SlurmctldHost=$node(127.0.0.1)
AuthType=auth/none
CredType=cred/none
SlurmUser=$(id -un)
SlurmdUser=$(id -un)
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=10 State=UP
CONF
slurmctld -c -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 50); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
if ! sinfo -h -o %t | grep -q idle; then
  echo "the single-node Slurm did not come up:" >&2
  tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log >&2 || true
  exit 1
fi

sweep=("$ipusim" sweep "$PWD/configs/tf1_mnist_2ipu.json" --quiet --jobs 1
       --vary pipeline.gradient_accumulation_count=4,8,16
       --vary pipeline.pipeline_schedule=grouped,interleaved)
"${sweep[@]}" -o "$dir/whole.csv"

cat >"$dir/array.sh" <<JOB
#!/usr/bin/env bash
exec ${sweep[*]} --shard auto -o "$dir/task\$SLURM_ARRAY_TASK_ID.csv"
JOB
timeout 120 sbatch --wait --array=1-4 --output="$dir/task%a.log" --chdir="$dir" "$dir/array.sh" \
  >/dev/null
"$ipusim" merge -o "$dir/merged.csv" "$dir"/task{1,2,3,4}.csv >/dev/null
cmp "$dir/whole.csv" "$dir/merged.csv"
echo "slurm sweep: an array job of 4 tasks merged equals the unsharded sweep" \
  "($(wc -l <"$dir/whole.csv") lines)"
