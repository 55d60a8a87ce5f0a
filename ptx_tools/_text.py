"""Low-level text helpers shared by the parser, the normaliser and the feature tagger."""
from __future__ import annotations

import bisect
import re

from .errors import PtxError

# Comments are blanked (same length, newlines kept) so offsets and line numbers of the
# cleaned text match the original; string literals are kept as they are.
_COMMENT_OR_STRING = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'      # complete string literal
    r'|//[^\n]*'                # line comment
    r'|/\*[\s\S]*?\*/'          # block comment
    r'|/\*'                     # block comment that never ends
    r'|"'                       # string that never ends on its line
)

# An identifier, or a register (%r1), not preceded by a character that would make it part of
# a directive/modifier (.u32, shared::cta) or a longer word.
IDENTIFIER = re.compile(r'(?<![\w$%.:])[A-Za-z_$%][\w$]*')
STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# A label definition: at a line start or after a statement end / brace; "::" is not a label.
_LINE_DIRECTIVE = re.compile(r"^[ \t]*(?:\.loc|\.file|@@DWARF)\b[^\n]*", re.M)
LABEL_DEF = re.compile(r'(?:^|(?<=[;{}]))[ \t]*([A-Za-z_$][\w$]*)[ \t]*:(?!:)', re.M)


class LineIndex:
    """Maps character offsets to 1-based line numbers."""

    def __init__(self, text: str):
        self._starts = [0] + [m.end() for m in re.finditer(r"\n", text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)


def strip_comments(text: str) -> str:
    """Blank out // and /* */ comments outside string literals, keeping offsets and lines."""
    lines = None

    def replace(match: re.Match) -> str:
        nonlocal lines
        token = match.group(0)
        if token == "/*" or token == '"':
            lines = lines or LineIndex(text)
            what = "comment '/*' is never closed" if token == "/*" else "string literal is never closed"
            raise PtxError(lines.line(match.start()), what)
        if token.startswith('"'):
            return token
        return re.sub(r"[^\n]", " ", token)

    return _COMMENT_OR_STRING.sub(replace, text)


def sub_identifiers(text: str, mapping: dict) -> str:
    """Rename identifiers (never text inside string literals) through ``mapping``."""
    if not mapping:
        return text
    pieces = []
    last = 0
    for m in STRING.finditer(text):
        pieces.append(_sub_plain(text[last:m.start()], mapping))
        pieces.append(m.group(0))
        last = m.end()
    pieces.append(_sub_plain(text[last:], mapping))
    return "".join(pieces)


def _sub_plain(text: str, mapping: dict) -> str:
    return IDENTIFIER.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


def identifiers(text: str) -> list:
    """Identifiers outside string literals, in order of appearance."""
    return IDENTIFIER.findall(STRING.sub(" ", text))


def iter_instructions(clean_body: str):
    """Yield the opcode (with modifiers, e.g. 'ld.global.v4.b32') of each instruction in a
    comment-free function body; declarations (.reg, .shared, ...) and labels are skipped."""
    # .loc / .file lines end at the newline, not at ';', so drop them before splitting.
    clean_body = _LINE_DIRECTIVE.sub("", clean_body)
    for piece in clean_body.split(";"):
        piece = piece.strip()
        # Peel braces of nested scopes and leading labels off the statement.
        while piece:
            if piece[0] in "{}":
                piece = piece[1:].lstrip()
                continue
            m = LABEL_DEF.match(piece)
            if m:
                piece = piece[m.end():].lstrip()
                continue
            break
        if not piece or piece[0] == ".":
            continue
        if piece[0] == "@":  # guard predicate: @%p1 or @!%p1
            m = re.match(r"@!?\s*[%\w$]+\s*", piece)
            piece = piece[m.end():] if m else ""
        m = re.match(r"[A-Za-z][\w.:]*", piece)
        if m:
            yield m.group(0)
