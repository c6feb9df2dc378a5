#!/usr/bin/env bash
# Install what the test suite needs (only what changed since the last run), then run every stage and report each;
# exit non-zero when any stage fails. `.ci/run` calls exactly this. Arguments go to the first stage's pytest and
# skip the others (e.g. `bash scripts/test.sh tests/test_tensor.py -x`).
set -uo pipefail
source "$(dirname "$0")/env.sh" test
cd "$core_root"

stages=()
failed=0
run_stage() {  # run_stage NAME COMMAND...: run it, remember its result and time
    local name="$1" started=$SECONDS status
    shift
    echo "=== stage: $name"
    "$@"
    status=$?
    [ "$status" -eq 5 ] && { echo "pytest collected no tests: treating as a failure" >&2; status=1; }
    stages+=("$(printf '%-10s %-6s %4d s' "$name" "$([ "$status" -eq 0 ] && echo passed || echo FAILED)" \
                $((SECONDS - started)))")
    [ "$status" -eq 0 ] || failed=1
}

# CORE_CPU_C_MIN_NUMEL=0: when the cpu_c plugin serves `cpu`, even the suite's tiny tensors run its C kernels
# (by default tensors under 4096 elements use the NumPy kernels, which cost less per call).
run_stage pytest env CORE_CPU_C_MIN_NUMEL=0 python3 -m pytest -q -p no:cacheprovider "$@"
if [ "$#" -eq 0 ] && python3 -c "import core_cpu_c" 2>/dev/null; then
    # cpu_c took the cpu device above: the op-conformance and gradient checks once more on the NumPy reference
    run_stage reference env CORE_BACKENDS=cpu=numpy python3 -m pytest -q -p no:cacheprovider --core-backend cpu \
        tests/test_conformance.py tests/test_gradcheck.py
    # cpu_c's C under AddressSanitizer + UBSan (about a minute with the build)
    run_stage sanitize bash scripts/sanitize.sh
fi

echo "=== stages"
printf '%s\n' "${stages[@]}"
exit "$failed"
