#!/usr/bin/env bash
# A sweep run as 4 shards through GNU parallel, then merged, is the unsharded sweep byte for
# byte; so is one whose shards find their slice as Slurm array tasks do (--shard auto).
#   tests/tools/parallel_sweep_test.sh IPUSIM     (from the source directory)
set -euo pipefail
ipusim="$1"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
sweep=("$ipusim" sweep configs/tf1_mnist_2ipu.json --quiet --jobs 1
       --vary pipeline.gradient_accumulation_count=4,8,16
       --vary pipeline.pipeline_schedule=grouped,interleaved)

"${sweep[@]}" -o "$dir/whole.csv"

parallel --will-cite --halt now,fail=1 -j 2 "${sweep[@]}" --shard {}/4 -o "$dir/shard{}.csv" \
  ::: 1 2 3 4
"$ipusim" merge -o "$dir/merged.csv" "$dir"/shard{1,2,3,4}.csv >/dev/null
cmp "$dir/whole.csv" "$dir/merged.csv"

parallel --will-cite --halt now,fail=1 -j 2 \
  env SLURM_ARRAY_TASK_ID={} SLURM_ARRAY_TASK_MIN=0 SLURM_ARRAY_TASK_MAX=3 \
  "${sweep[@]}" --shard auto -o "$dir/task{}.csv" ::: 0 1 2 3
"$ipusim" merge -o "$dir/merged_auto.csv" "$dir"/task{0,1,2,3}.csv >/dev/null
cmp "$dir/whole.csv" "$dir/merged_auto.csv"
echo "parallel sweep: 4 shards merged equal the unsharded sweep ($(wc -l <"$dir/whole.csv") lines)"
