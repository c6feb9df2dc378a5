#!/usr/bin/env bash
# Build cpu_c with -fsanitize=address,undefined in a scratch copy and run the suites that reach its C kernels, then
# the fuzzer (core.testing.fuzz) on cpu, against that build (docs/backends/cpu_c.md, "Sanitizer run").
# scripts/test.sh runs it after the main suite; `bash scripts/sanitize.sh` alone works too, on a fresh clone:
# it runs in the README's environment (scripts/env.sh: made and filled with the test tools on first use).
set -euo pipefail
source "$(dirname "$0")/env.sh" test
cd "$core_root"
asan="$(gcc -print-file-name=libasan.so)"
ubsan="$(gcc -print-file-name=libubsan.so)"
if [ ! -e "$asan" ] || [ ! -e "$ubsan" ]; then
    echo "sanitize.sh: gcc has no libasan/libubsan here; skipping the sanitizer run" >&2
    exit 0
fi
build="$(mktemp -d)"
trap 'rm -rf "$build"' EXIT
cp -r plugins/cpu_c/. "$build"
rm -f "$build"/core_cpu_c/_ext*.so
(cd "$build" && CORE_CPU_C_SANITIZE=1 python3 setup.py -q build_ext --inplace > build.log 2>&1) \
    || { cat "$build/build.log" >&2; exit 1; }
export PYTHONPATH="$build" LD_PRELOAD="$asan $ubsan" ASAN_OPTIONS=detect_leaks=0 CORE_CPU_C_MIN_NUMEL=0
python3 -c "import sys, core_cpu_c; assert core_cpu_c.__file__.startswith(sys.argv[1]), core_cpu_c.__file__" "$build"
python3 -m pytest -q -p no:cacheprovider --core-backend cpu tests/test_cpu_c*.py tests/test_conformance.py \
    tests/test_elementwise.py tests/test_linalg.py tests/test_nn_conv.py tests/test_nn_pooling.py tests/test_optim.py
# seed 1: other cases than tests/test_fuzz.py's seed 0; an ASan or UBSan report aborts a batch and counts as a crash
python3 -m core.testing.fuzz --device cpu --cases "${CORE_SANITIZE_FUZZ_CASES:-2000}" --seed 1 --batch 500
