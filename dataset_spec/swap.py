"""The folder swap that ends a resplit, and its recovery: the new configs are written
under ``.resplit-new`` with a ``COMPLETE`` marker, then swapped in; ``recover`` rolls an
interrupted swap forward (marker present) or discards it. Every writer calls it before
writing (``shards.ShardWriter``), so a cut-short resplit never mixes with new rows."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

NEW, OLD, COMPLETE = ".resplit-new", ".resplit-old", "COMPLETE"


def recover(root, move=os.replace) -> str:
    """Finish or discard an interrupted resplit: '' when there was none. ``move``
    renames (``resplit`` passes its own, which a test interrupts)."""
    root = Path(root)
    new, old = root / NEW, root / OLD
    if (new / COMPLETE).is_file():
        marker = json.loads((new / COMPLETE).read_text())
        old.mkdir(exist_ok=True)
        for config in marker["replace"] + marker["drop"]:
            current = root / config
            if config in marker["replace"] and not (new / config).is_dir():
                continue  # already swapped in
            if current.is_dir():
                if (old / config).exists():
                    shutil.rmtree(old / config)
                move(current, old / config)
            if config in marker["replace"]:
                move(new / config, current)
        shutil.rmtree(new)
        shutil.rmtree(old, ignore_errors=True)
        return "rolled forward"
    if new.exists() or old.exists():
        shutil.rmtree(new, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
        return "discarded"
    return ""
