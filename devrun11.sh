#!/usr/bin/env bash
mkdir -p $OUT/r
git log --oneline -1 > $OUT/r/tree.txt
BUDGET=300 OUT=$OUT/r bash scripts/gemm_device_check.sh
cd $OUT && tar czf check.tgz r && rm -rf r
