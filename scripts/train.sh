#!/usr/bin/env bash
# The main job: make or reuse the project environment, install what changed (core, tqdm, the cpu_c backend, and the
# cuda/opencl stacks only where this machine has their driver), then train the digits CNN on the default device.
# Extra arguments go to the training program, e.g. `bash scripts/train.sh --device cpu --epochs 5`; see --help.
set -euo pipefail
source "$(dirname "$0")/env.sh" train
cd "$core_root"
exec python3 examples/train_digits.py "$@"
