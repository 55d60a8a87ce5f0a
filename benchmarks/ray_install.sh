#!/usr/bin/env bash
# Install Ray from an offline wheel folder (made by benchmarks/ray_wheels.py) into a target
# folder, with no package index, then check that it starts and runs a task and an actor.
# Usage: benchmarks/ray_install.sh [WHEEL_DIR] [TARGET]; then export PYTHONPATH=TARGET:$PYTHONPATH
set -euo pipefail
WHEELS=${1:-.whl-ray}
TARGET=${2:-/tmp/site}
PYTHON=${PYTHON:-python3}
"$PYTHON" -m pip install -q --no-index --no-deps --target "$TARGET" "$WHEELS"/*.whl
PYTHONPATH="$TARGET${PYTHONPATH:+:$PYTHONPATH}" "$PYTHON" - <<'PY'
import ray
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
square = ray.remote(lambda x: x * x)
assert ray.get(square.remote(7)) == 49

@ray.remote
class Counter:
    def __init__(self):
        self.n = 0
    def add(self):
        self.n += 1
        return self.n

counter = Counter.remote()
assert ray.get([counter.add.remote() for _ in range(3)]) == [1, 2, 3]
print(f"ray {ray.__version__} ok: task and actor ran on {ray.cluster_resources()}")
ray.shutdown()
PY
