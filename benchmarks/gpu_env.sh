# Sourced by the GPU scripts: the project on PYTHONPATH, cupti-python from a wheel carried in
# .whl/ (for this Python; without it timing falls back to CUDA events), and the machine's
# own CUDA 13.0 toolkit for ptx_tools where the pinned wheels are not installed. Pure-Python
# dependencies the machine lacks (pebble; datasets, dill and multiprocess, which writing the
# card needs) are carried as wheels in .whl/ too.
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
pytag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
cupti_whl=$(ls .whl/cupti_python-*-"$pytag"-*.whl 2>/dev/null | sort -V | tail -n 1)
if [ -n "$cupti_whl" ] && python3 -m pip install -q --no-index --no-deps --upgrade --target /tmp/ptxds-site "$cupti_whl" 2>/dev/null; then
  export PYTHONPATH=/tmp/ptxds-site:$PYTHONPATH
fi
for whl in .whl/*-py3-none-any.whl .whl/*-"${pytag/cp/py}"-none-any.whl; do
  [ -e "$whl" ] && python3 -m pip install -q --no-index --no-deps --target /tmp/ptxds-site "$whl" 2>/dev/null
done
case ":$PYTHONPATH:" in *:/tmp/ptxds-site:*) ;; *) export PYTHONPATH=/tmp/ptxds-site:$PYTHONPATH ;; esac
if ! python3 -c "import ptx_tools; ptx_tools.find_tool('nvcc')" 2>/dev/null && command -v nvcc >/dev/null; then
  export PTXDS_CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
fi
