#!/usr/bin/env bash
# The main job: install core (and tqdm for the progress bar), then train the digits CNN on the default device.
# Extra arguments go to the training program, e.g. `bash scripts/train.sh --device cpu --epochs 5`.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e ".[examples]"
for plugin in plugins/*/; do  # installed backend plugins take part in the default-device choice
    [ -f "$plugin/pyproject.toml" ] && python3 -m pip install --quiet --disable-pip-version-check -e "$plugin"
done
exec python3 examples/train_digits.py "$@"
