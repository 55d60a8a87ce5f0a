#!/usr/bin/env bash
# Built datasets before and after a refactor, row by row: builds the sets of
# benchmarks/build_identity.sh with the checkout of BASE (a commit, in a temporary worktree)
# and with this checkout, then compares every config of each pair with
# benchmarks/compare_datasets.py. Columns a schema change or the output folder's path may
# change are left out (schema_version, findings, provenance: it holds the command line).
# Usage: benchmarks/architecture_identity.sh BASE WORK_DIR [PYTHON]
set -euo pipefail
base=$1; work=$2; python=${3:-python}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$work"; work=$(cd "$work" && pwd)
rm -rf "$work/base-tree"; git -C "$here" worktree add -f --detach "$work/base-tree" "$base" >/dev/null
trap 'git -C "$here" worktree remove --force "$work/base-tree" >/dev/null 2>&1 || true' EXIT
PYTHONPATH="$work/base-tree" bash "$here/benchmarks/build_identity.sh" "$work/base-tree" "$work/base" "$python"
PYTHONPATH="$here" bash "$here/benchmarks/build_identity.sh" "$here" "$work/head" "$python"
status=0
for set in triton mutants cutlass mirage handhack; do
    if PYTHONPATH="$here" "$python" "$here/benchmarks/compare_datasets.py" "$work/base/$set" "$work/head/$set" \
            --ignore schema_version --ignore findings --ignore provenance; then
        echo "$set: identical"
    else
        echo "$set: DIFFERS"; status=1
    fi
done
exit $status
