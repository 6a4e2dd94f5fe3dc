"""How deep a JSON document nests, counted before it is parsed: for bodies we did not write (delphi
requests, exchange answers). Python's json module recurses per level, so deep enough nesting raises
RecursionError (or overflows the C stack) instead of a clean refusal.
"""

from __future__ import annotations

import re

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
