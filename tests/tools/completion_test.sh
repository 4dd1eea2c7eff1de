#!/usr/bin/env bash
# The bash completion ipusim prints completes commands and each command's options in bash
# itself, and the zsh one loads through bashcompinit.
#   tests/tools/completion_test.sh IPUSIM
set -euo pipefail
ipusim="$1"
script="$(mktemp)"
trap 'rm -f "$script"' EXIT
"$ipusim" completion bash >"$script"

complete_words() {  # prints what completing the words "$@" (the last being typed) offers
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1));
           _ipusim; echo "${COMPREPLY[*]}"' _ "$script" "$@"
}

check() {  # check EXPECTED WORDS...
  local expected="$1"
  shift
  local got
  got="$(complete_words "$@")"
  if [[ "$got" != "$expected" ]]; then
    echo "completing '$*': expected '$expected', got '$got'" >&2
    exit 1
  fi
}

check "plan" ipusim pl
check "--gac" ipusim run --ga
check "--ipus-per-replica --ipus" ipusim plan configs/tf1_mnist_2ipu.json --ipus
check "--micro-batch --merge" ipusim plan x --m
check "configs/tf1_mnist_2ipu.json" ipusim run configs/tf1_mnist_2
check "bash zsh" ipusim completion ""
check "conv2d concat conv1d conv2d_transpose" ipusim layers con
check "interleaved interleaved_1f1b" ipusim run x --schedule inter
check "grouped" ipusim compare x --schedules gr
check "json" ipusim schedule x --format j
check "stash_fifos" ipusim plan x --offload st
check "pipeline.gradient_accumulation_count= pipeline.gradient_accumulation_dtype= pipeline.gradient_accumulation_reduction=" \
  ipusim run x --set pipeline.grad
check "hardware.host_link_bandwidth= hardware.host_input_bandwidth= hardware.host_call=" \
  ipusim sweep x --vary hardware.host_
check "data.seed= data.sequences_per_sample=" ipusim run x --set data.se
check "pipeline.micro_batch_size=" ipusim compare x --with pipeline.micro
# Read whole before grep: grep -q stops at the first match, and under pipefail the program's
# write into the closed pipe would fail the test.
zsh_script="$("$ipusim" completion zsh)"
grep -q '^autoload -U +X bashcompinit && bashcompinit$' <<<"$zsh_script"
echo "completion: commands, options, option values, layer types, --set paths and files complete"
