"""How deep a JSON document nests, counted before it is parsed: for bodies we did not write (delphi
requests, exchange answers, the chain provider's answers). Python's json module recurses per level, so
deep enough nesting raises RecursionError (or overflows the C stack) instead of a clean refusal.
"""

from __future__ import annotations

import re
from itertools import accumulate

# The characters the depth count looks at: brackets, and what opens, escapes or closes a string.
_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\]')


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in `text` (brackets inside strings do not count).

    One pass over the structural characters, never looking back: a string that never closes (`"` then
    `\\"` repeated) once made a regex restart its scan at every quote, quadratic in the body."""
    depth = deepest = 0
    in_string = False
    escaped_at = -1  # the position a backslash inside a string escapes
    for match in _JSON_STRUCTURE.finditer(text):
        at, char = match.start(), match.group()
        if in_string:
            if at == escaped_at:
                continue
            if char == "\\":
                escaped_at = at + 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


_ESCAPED = re.compile(rb"\\.", re.DOTALL)  # a backslash and what it escapes (only ever inside a string)
_CLOSED_STRING = re.compile(rb'"[^"]*"')  # with escapes gone, a string ends at the next quote
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_AS_STEPS = bytes.maketrans(b"[]{}", b"\x01\xff\x01\xff")  # +1 / -1 as signed bytes


def nested_deeper_than(data: bytes, limit: int) -> bool:
    """Whether `data` (a JSON text as bytes) nests arrays and objects deeper than `limit`: for answers of
    many MB, where a Python loop per character (`json_depth`) costs as much as decoding.

    A text with no more opening brackets than `limit` cannot, and is not looked at further. Otherwise the
    same count as `json_depth`, done by C-speed bytes and regex work: escapes dropped, then everything but
    brackets and quotes, then whole strings (with escapes gone each `"[^"]*"` ends at the next quote, so
    an unclosed string costs one scan, never one per quote); the stray quote of an unclosed string is
    dropped and the brackets after it still count (not JSON, but a decoder would recurse into them)."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    structure = _ESCAPED.sub(b"", data).translate(None, _NOT_STRUCTURE)
    steps = _CLOSED_STRING.sub(b"", structure).replace(b'"', b"").translate(_AS_STEPS)
    return max(accumulate(memoryview(steps).cast("b")), default=0) > limit
