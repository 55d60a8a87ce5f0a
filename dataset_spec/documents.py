"""Reading the YAML/JSON files users write (manifests, shape sets, problem specs, launch
overrides): a parse error is one line naming the file, line and column."""
from __future__ import annotations

import json
from pathlib import Path

from .model import SpecError


class DocumentError(SpecError):
    """A YAML/JSON syntax error, with where it is (1-based line and column, 0 if unknown)."""

    def __init__(self, where: str, line: int, column: int, what: str):
        position = f":{line}:{column}" if line else ""
        super().__init__(f"{where}{position}: {what}")
        self.line, self.column, self.what = line, column, what


def parse_document(text: str, where: str, suffix: str):
    """Parse ``text`` as JSON (``suffix`` .json) or YAML (anything else); a syntax error is
    a SpecError ``where:LINE:COLUMN: invalid YAML|JSON: what``."""
    if suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise DocumentError(where, exc.lineno, exc.colno, f"invalid JSON: {exc.msg}") from None
    import yaml
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        what = getattr(exc, "problem", None) or str(exc).strip().splitlines()[0]
        raise DocumentError(where, mark.line + 1 if mark else 0, mark.column + 1 if mark else 0,
                            f"invalid YAML: {what}") from None


def load_document(path) -> object:
    """A YAML or JSON file's data (by suffix: .json is JSON, anything else YAML)."""
    path = Path(path)
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    return parse_document(text, str(path), path.suffix)
