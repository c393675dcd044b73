#!/bin/bash
# Mutation run on the device machine's CPUs, of the mutants that have no verdict yet: those
# that no earlier verbose log (docs/verification/*mutation*.txt) records as killed or timed
# out and that are not judged equivalent (scripts/mutate.py --skip-verdicts).
#
#   OUT=/path/to/results [BUDGET=500] [JOBS=15] bash scripts/mutate_device.sh
#
# Two groups run at once, each with its own mutate.py process: gemm (gemm/hopper.py,
# gemm/shapes.py) and rest (kernels.py, ir/intrinsics/tma.py); the JOBS are split between them
# in proportion to their mutants left to run. Each stops starting mutants after BUDGET seconds.
# Logs and survivors go to $OUT/m/<group>.log / <group>.txt (table: <group>.table), and
# $OUT/m is packed into $OUT/mut.tgz at the end. As in CI: the GPU hidden, nvcc off PATH
# (NVRTC builds still run), one thread per numpy process.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder the results go to}"
BUDGET=${BUDGET:-500}
JOBS=${JOBS:-15}
export CUDA_VISIBLE_DEVICES= PYTHONUNBUFFERED=1 OMP_NUM_THREADS=1
KEEP=""  # PATH without the folders that hold an nvcc
IFS=: read -ra DIRS <<< "$PATH"
for dir in "${DIRS[@]}"; do
    [ -x "$dir/nvcc" ] || KEEP="${KEEP:+$KEEP:}$dir"
done
export PATH=$KEEP

M=src/tilemem
GROUPS_=(gemm rest)
declare -A MODULES=(
    [gemm]="$M/gemm/hopper.py $M/gemm/shapes.py"
    [rest]="$M/kernels.py $M/ir/intrinsics/tma.py $M/ir/intrinsics/memory.py"
)
LOGS=(docs/verification/*mutation*.txt)
D=$OUT/m
mkdir -p "$D"

{
    date -u
    echo "commit: $(git rev-parse HEAD 2>/dev/null || echo 'unknown (no .git)')"
    echo "cores: $(nproc --all); $(python3 --version 2>&1); nvcc: $(command -v nvcc || echo none)"
    echo "BUDGET=$BUDGET JOBS=$JOBS"
    echo "verdicts from: ${LOGS[*]}"
} > "$D/env.txt"

# mutants left to run per group (the --skip-verdicts summary lines of --list)
declare -A COUNT
for g in "${GROUPS_[@]}"; do
    # shellcheck disable=SC2086
    python3 scripts/mutate.py --list --skip-verdicts "${LOGS[@]}" --module ${MODULES[$g]} \
        > "$D/$g.list" 2>&1 &
done
wait
for g in "${GROUPS_[@]}"; do
    COUNT[$g]=$(awk '/^--skip-verdicts: /{n += $3} END {print n + 0}' "$D/$g.list")
    grep '^--skip-verdicts: ' "$D/$g.list" >> "$D/env.txt"
done
TOTAL=$((COUNT[gemm] + COUNT[rest]))
if [ "$TOTAL" -eq 0 ]; then
    echo "no mutant without a verdict" | tee -a "$D/env.txt"
else
    # jobs in proportion to the counts, at least one for a group with mutants
    declare -A SHARE
    SHARE[gemm]=$(((JOBS * COUNT[gemm] + TOTAL / 2) / TOTAL))
    [ "${COUNT[gemm]}" -gt 0 ] && [ "${SHARE[gemm]}" -lt 1 ] && SHARE[gemm]=1
    SHARE[rest]=$((JOBS - SHARE[gemm]))
    [ "${COUNT[rest]}" -gt 0 ] && [ "${SHARE[rest]}" -lt 1 ] && SHARE[rest]=1
    [ "${COUNT[rest]}" -eq 0 ] && SHARE[rest]=0
    for g in "${GROUPS_[@]}"; do
        echo "$g: ${COUNT[$g]} mutants, ${SHARE[$g]} job(s)" >> "$D/env.txt"
        [ "${SHARE[$g]}" -gt 0 ] || continue
        # shellcheck disable=SC2086
        python3 scripts/mutate.py --verbose --jobs "${SHARE[$g]}" --budget "$BUDGET" \
            --skip-verdicts "${LOGS[@]}" --survivors "$D/$g.txt" \
            --module ${MODULES[$g]} > "$D/$g.log" 2>&1 &
    done
    wait
fi
date -u >> "$D/env.txt"
tar -czf "$OUT/mut.tgz" -C "$OUT" m
cat "$D/env.txt"
