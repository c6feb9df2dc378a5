#!/usr/bin/env bash
# Install everything the test suite needs, then run the whole suite. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[dev]"
for plugin in plugins/*/; do  # backend plugins (each its own distribution), when present
    [ -f "$plugin/pyproject.toml" ] && python3 -m pip install --quiet --disable-pip-version-check -e "$plugin"
done
set +e
python3 -m pytest -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: treating as a failure" >&2
    exit 1
fi
exit "$status"
