"""TVM's tensor intrinsics (``tvm.s_tir.tensor_intrin``), imported once per process in
seconds instead of about a minute, with a progress line before it.

Importing that package parses some 500 TVMScript functions; each parse calls
``inspect.stack()``, which asks ``inspect.getmodule`` for every frame of the import stack.
For a frame of a file that is no module (``<frozen importlib._bootstrap>``) getmodule scans
all of ``sys.modules`` each time: 49 s of a 53 s import on 2 cores, in the driver and again
in every build worker. For a frame the answer depends only on its file, so while the
package is imported the answers are kept per file."""
from __future__ import annotations

import contextlib
import inspect
import logging
import sys
import time

PACKAGE = "tvm.s_tir.tensor_intrin"
# A command shows these lines unless --silent (ptxds.cli).
PROGRESS = logging.getLogger("ptxds.progress")


def load_tensor_intrinsics() -> None:
    """Import TVM's tensor intrinsics, which MetaSchedule's CUDA rules refer to (and
    ``TuneContext`` imports itself); a second call costs nothing."""
    if PACKAGE in sys.modules:
        return
    PROGRESS.info("tvm: loading TVM's tensor intrinsics (a few seconds, once per process)")
    start = time.time()
    with _getmodule_kept_per_file():
        __import__(PACKAGE)
    PROGRESS.debug("tvm: tensor intrinsics loaded in %.1f s", time.time() - start)


@contextlib.contextmanager
def _getmodule_kept_per_file():
    original = inspect.getmodule
    kept: dict = {}

    def getmodule(obj, _filename=None):
        if not (inspect.isframe(obj) or inspect.iscode(obj) or inspect.istraceback(obj)):
            return original(obj, _filename)
        key = _filename or _file_of(obj)
        if key is None:
            return original(obj, _filename)
        if key not in kept:
            kept[key] = original(obj, _filename)
        return kept[key]

    inspect.getmodule = getmodule
    try:
        yield
    finally:
        inspect.getmodule = original


def _file_of(obj):
    try:
        return inspect.getfile(obj)
    except TypeError:
        return None
