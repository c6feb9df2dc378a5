#!/usr/bin/env bash
# Install everything the test suite needs, then run the whole suite. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[dev]"
for plugin in plugins/*/; do  # backend plugins (each its own distribution), when present
    [ -f "$plugin/pyproject.toml" ] && python3 -m pip install --quiet --disable-pip-version-check -e "$plugin"
done
set +e
# CORE_CPU_C_MIN_NUMEL=0: when the cpu_c plugin serves `cpu`, even the suite's tiny tensors run its C kernels
# (by default tensors under 4096 elements use the NumPy kernels, which cost less per call).
CORE_CPU_C_MIN_NUMEL=0 python3 -m pytest -q -p no:cacheprovider "$@"
status=$?
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ] && python3 -c "import core_cpu_c" 2>/dev/null; then
    # cpu_c took the cpu device above: run the op-conformance and gradient checks once more on the NumPy reference
    CORE_BACKENDS=cpu=numpy python3 -m pytest -q -p no:cacheprovider --core-backend cpu tests/test_conformance.py \
        tests/test_gradcheck.py
    status=$?
fi
if [ "$status" -eq 0 ] && [ "$#" -eq 0 ] && python3 -c "import core_cpu_c" 2>/dev/null; then
    bash scripts/sanitize.sh  # cpu_c's C under AddressSanitizer + UBSan (about a minute with the build)
    status=$?
fi
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
exit "$status"
