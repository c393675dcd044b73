#!/usr/bin/env bash
# One run on an H200 for the Hopper GEMM (fp8 promotion, boxes past the matrix edges, the
# long-K policy) and the whole GPU check, from the repository root:
#
#   bash scripts/gemm_device_check.sh      (PYTHONPATH=src is set here)
#
# Sections, in order of importance; each prints a "==== [elapsed] NAME" header to stdout and
# writes its full output to one file under $OUT:
#   env.txt        GPU, driver, clocks, versions
#   tests.txt      (a) every GPU test (pytest -m gpu), the GEMM's among them: ragged shapes,
#                  every width and cluster, staged operands, split-K, small-M kernels, boxes
#                  past the matrix edges without staging (bf16 and fp8), fp8 promotion at
#                  K = 16384
#   accuracy.txt   (b) fp8 error against K (1024 .. 28672) at M = N = 4096: promoted every
#                  K tile, every two, unpromoted, cuBLASLt (torch._scaled_mm)
#   bench_bf16.txt (c) benchmarks/gemm.py, bf16, the standard and inference sets, the policy
#                  launched plainly (no programmatic stream serialization) timed beside it,
#                  and the kernels cuBLAS ran for each shape (--cublas-names)
#   bench_fp8.txt  (c) the same for fp8 (the policy promoting every two K tiles)
#   verify.txt, sanitizer_memcheck.txt, sanitizer_racecheck.txt
#                  tilemem verify, and compute-sanitizer on verify --quick
#   memcheck.txt   compute-sanitizer memcheck of the small and staged shapes (only if time is left)
#   bench_*.txt    (d) with REPEATS=N > 1, N - 1 more runs of each benchmark appended (if time
#                  is left), the plain launch not timed
#   medians.txt    each benchmark run's geometric mean and shapes under 0.95, and each shape's
#                  median over the runs (benchmarks/gemm_medians.py): one run can put a shape a
#                  few percent off its usual ratio
#   summary.txt    this script's stdout
# BUDGET (seconds, default 330) bounds the whole run: a section that would start past its share
# is skipped, and every section runs under `timeout`. DRY_RUN=1 prints the commands only.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src" PYTHONUNBUFFERED=1
OUT="${OUT:-/tmp/gemmrun}"
mkdir -p "$OUT"
BUDGET="${BUDGET:-330}"
DRY="${DRY_RUN:-0}"
REPEATS="${REPEATS:-1}"
START=$SECONDS

header() { echo; echo "==== [$((SECONDS - START)) s] $*"; }

# run NAME LIMIT CMD...: CMD under `timeout LIMIT`, output to $OUT/NAME.txt (appended), the
# tail shown; skipped when fewer than 20 s of the budget are left
run() {
  local name=$1 limit=$2
  shift 2
  local left=$((BUDGET - (SECONDS - START)))
  if ((left < 20)); then
    echo "SKIPPED (budget: ${left} s left): $*"
    return 99
  fi
  ((limit > left)) && limit=$left
  echo "\$ $* (timeout ${limit} s) >> $name.txt"
  if [[ "$DRY" == 1 ]]; then return 0; fi
  echo "\$ $*" >>"$OUT/$name.txt"
  timeout --signal=INT --kill-after=10 "$limit" "$@" >>"$OUT/$name.txt" 2>&1
  local rc=$?
  tail -n "${TAIL:-12}" "$OUT/$name.txt"
  echo "exit status $rc ($((SECONDS - START)) s elapsed)"
  return $rc
}

main() {
header "environment"
{
  date -u '+date %Y-%m-%d %H:%M:%S UTC'
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv 2>&1
  python3 -c "import torch, cuda.core, cuda.bindings; print('torch', torch.__version__, \
'cuda-core', cuda.core.__version__, 'cuda-bindings', cuda.bindings.__version__)" 2>&1
  command -v compute-sanitizer || echo "compute-sanitizer not on PATH"
} | tee "$OUT/env.txt"

header "(a) correctness: GPU tests of the GEMM (bf16 and fp8; ragged, staged, split-K, small M)"
TAIL=15 run tests 170 python3 -m pytest -q -rfE -m gpu -p no:cacheprovider tests
tests_rc=$?
# a small-M GEMM without staging (TMA boxes past the matrix edges): if it failed, the
# benchmarks pad small matrices into workspaces as before
stage_flag=()
if grep -q "FAILED.*boxes_past_the_edges" "$OUT/tests.txt" 2>/dev/null; then
  stage_flag=(--stage-small)
  echo "BOXES PAST THE EDGES FAILED: the benchmarks run with --stage-small"
elif ((tests_rc == 0)); then
  echo "boxes past the matrix edges: passed (benchmarks run small matrices in place)"
fi

header "(b) fp8 accuracy against K: promoted (every K tile, every two), unpromoted, cuBLASLt"
TAIL=8 run accuracy 60 python3 benchmarks/gemm.py --accuracy 1024,4096,16384,28672

header "(c) bf16 benchmark: standard and inference sets (alternating rounds, median)"
TAIL=4 run bench_bf16 150 python3 benchmarks/gemm.py --shapes all,inference --variants plain \
  --dtypes bfloat16 --rounds 5 --cublas-names ${stage_flag[@]+"${stage_flag[@]}"}
echo "lowest bf16 ratios:"
grep -E "^\| [0-9]+x" "$OUT/bench_bf16.txt" | sort -t'|' -k9 -n | head -8 || true

header "(c) fp8 benchmark: standard and inference sets, the plain launch timed beside"
TAIL=4 run bench_fp8 120 python3 benchmarks/gemm.py --shapes all,inference \
  --variants plain --dtypes float8_e4m3fn --rounds 5 --cublas-names ${stage_flag[@]+"${stage_flag[@]}"}

echo "lowest fp8 ratios (promoted policy):"
grep -E "^\| [0-9]+x" "$OUT/bench_fp8.txt" | sort -t'|' -k9 -n | head -8 || true

header "tilemem verify, then compute-sanitizer on verify --quick (if time is left)"
TAIL=3 run verify 60 python3 -m tilemem.cli verify
for tool in memcheck racecheck; do
  TAIL=4 run "sanitizer_$tool" 45 compute-sanitizer --tool "$tool" --error-exitcode 9 \
    python3 -m tilemem.cli verify --quick
done

header "memcheck of the small and staged shapes (if time is left)"
if command -v compute-sanitizer >/dev/null; then
  TAIL=6 run memcheck 90 compute-sanitizer --tool memcheck --report-api-errors no \
    --error-exitcode 9 python3 benchmarks/gemm.py --sanitize --dtypes bfloat16,float8_e4m3fn \
    --variants "" ${stage_flag[@]+"${stage_flag[@]}"}
else
  echo "compute-sanitizer not on PATH: skipped"
fi

if ((REPEATS > 1)); then
  header "(d) the benchmarks $((REPEATS - 1)) more time(s) each (if time is left)"
  for ((i = 1; i < REPEATS; i++)); do
    TAIL=2 run bench_bf16 150 python3 benchmarks/gemm.py --shapes all,inference --variants "" \
      --dtypes bfloat16 --rounds 5 ${stage_flag[@]+"${stage_flag[@]}"}
    TAIL=2 run bench_fp8 120 python3 benchmarks/gemm.py --shapes all,inference --variants "" \
      --dtypes float8_e4m3fn --rounds 5 ${stage_flag[@]+"${stage_flag[@]}"}
  done
fi
header "each shape's median ratio over the benchmark runs (benchmarks/gemm_medians.py)"
if [[ "$DRY" != 1 ]]; then
  python3 benchmarks/gemm_medians.py "$OUT/bench_bf16.txt" "$OUT/bench_fp8.txt" 2>&1 |
    tee "$OUT/medians.txt"
fi

header "done: files in \$OUT"
ls -l "$OUT"
return "$tests_rc"
}

main 2>&1 | tee "$OUT/summary.txt"
