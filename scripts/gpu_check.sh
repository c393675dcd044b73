#!/usr/bin/env bash
# Run on a machine with an sm_90 GPU (the device tool's H200), from the repository root:
#   bash scripts/gpu_check.sh            -> GPU tests, tilemem verify, compute-sanitizer
# Uses the machine's python3 (torch, cuda-core, cuda-bindings, NVRTC: pip install -e '.[bench]')
# with src/ on the path. Every step's output goes to $OUT (default /tmp/tilemem-gpu), one file
# per step (device.txt, tma_fill.txt, gpu_tests.txt, verify.txt, sanitizer_*.txt).
set -uo pipefail
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-/tmp/tilemem-gpu}"
mkdir -p "$out"
echo "gpu_check: writing results to $out"
if ! python3 -c "import torch, cuda.core" 2>/dev/null; then
  echo "gpu_check: needs torch and cuda-core: pip install -e '.[bench]'" >&2
  exit 2
fi
status=0
echo "== device"; nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader | tee "$out/device.txt"
python3 -c "import cuda.core, cuda.bindings, torch; print('cuda-core', cuda.core.__version__, 'cuda-bindings', cuda.bindings.__version__, 'torch', torch.__version__)" | tee -a "$out/device.txt"
echo "== TMA fills a row-major buffer and every swizzle mode"
python3 -m pytest -q tests/cuda/test_gpu.py -k round_trips -p no:cacheprovider 2>&1 | tee "$out/tma_fill.txt" | tail -3 || status=1
echo "== GPU tests"
# includes tests/cuda/test_gpu_cpp_header.py: a CUDA C++ kernel TMA-loads into a plan header's buffer
python3 -m pytest -q -m gpu tests -p no:cacheprovider 2>&1 | tee "$out/gpu_tests.txt" | tail -15 || status=1
echo "== tilemem verify"
python3 -m tilemem.cli verify 2>&1 | tee "$out/verify.txt" || status=1
echo "== compute-sanitizer (memcheck, racecheck) on the quick verification set"
for tool in memcheck racecheck; do
  if command -v compute-sanitizer >/dev/null; then
    compute-sanitizer --tool "$tool" --error-exitcode 9 python3 -m tilemem.cli verify --quick \
      > "$out/sanitizer_$tool.txt" 2>&1; rc=$?
    echo "$tool: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|not supported' "$out/sanitizer_$tool.txt" | tail -2 | tr '\n' ' ')"
  else
    echo "$tool: compute-sanitizer not on PATH"
  fi
done
echo "gpu_check: results in $out: $(cd "$out" && ls | tr '\n' ' ')"
exit $status
