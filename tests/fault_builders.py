"""Builders that misbehave on purpose, for the executor tests: the Triton suite, but the
process that builds one chosen item dies the first time (a lost worker or node)."""
from __future__ import annotations

import os
from pathlib import Path

from builders.triton import TritonBuilder


class DieOnceBuilder(TritonBuilder):
    """``extra["die_item"]``: the key whose first build kills its process;
    ``extra["die_marker"]``: a file that records the death (holds the dead pid)."""
    name = "die-once"

    def build(self, item):
        marker = Path(self.options.extra["die_marker"])
        if item.key == self.options.extra["die_item"] and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(17)  # no cleanup, no exception: the process is simply gone
        return super().build(item)
