"""How deeply a JSON text nests, decided without parsing it.

Python's ``json`` parser recurses once per ``[`` or ``{``: a body of a few thousand
opening brackets raises ``RecursionError`` before the parser can report anything, and
whatever validates or re-encodes a deep value recurses again. So every JSON text the
broker parses is measured first, by a scan that does not recurse, and refused when it
nests deeper than ``MAX_JSON_DEPTH``.

The scan works on raw bytes: ``[ ] { } " \\`` are ASCII and never occur inside a
UTF-8 multi-byte sequence. String literals are cut out (brackets inside strings do
not nest), the remaining brackets become ``(`` and ``)``, closers are appended for
the openers a truncated body leaves open (the parser recurses into those too), and
each pass of ``replace(b"()", b"")`` removes every innermost pair: a pair survives
``k`` passes exactly when it encloses more than ``k`` levels. Every step is a C loop over the
bytes; a body with no more opening brackets than the limit is accepted after two
``bytes.count`` calls.

Invariant: ``not nests_too_deeply(text)`` implies ``json.loads(text)`` recurses at
most ``MAX_JSON_DEPTH`` levels, whether ``text`` is valid JSON or not (an unterminated
string ends the scan, and the parser stops there too).

Pure: no asyncio, no I/O.
"""

from __future__ import annotations

import re

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects accepted in a request body or a rendered value.

Generous for records and API bodies (a REST Proxy record is 3 levels plus its data),
far below the depth where parsing and validation risk the interpreter's stack.
"""

_STRING = re.compile(rb'"[^"]*"')
_TO_PARENTHESES = bytes.maketrans(b"[{]}", b"(())")
_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'"[]{}')


def _brackets_outside_strings(data: bytes) -> bytes:
    """The brackets of ``data`` that are not inside a string literal, cut at an unterminated string.

    Escaped backslashes, then escaped quotes, are dropped first, so every quote left
    opens or closes a string; then only quotes and brackets are kept. When every
    string is bracket-free, its quotes are adjacent (``""``) and one ``replace``
    removes them all; only otherwise does a regular expression cut the strings out.
    """
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = data.translate(None, _NOT_STRUCTURE)
    brackets = structure.replace(b'""', b"")
    if b'"' not in brackets:
        return brackets
    brackets = _STRING.sub(b"", structure)
    unterminated = brackets.find(b'"')
    return brackets if unterminated < 0 else brackets[:unterminated]


def nests_deeper_than(text: bytes | str, limit: int) -> bool:
    """True when some array or object of ``text`` sits more than ``limit`` levels deep."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    pairs = _brackets_outside_strings(data).translate(_TO_PARENTHESES)
    pairs += b")" * pairs.count(b"(")
    for _ in range(limit):
        if b"()" not in pairs:
            return False
        pairs = pairs.replace(b"()", b"")
    return b"()" in pairs


def nests_too_deeply(text: bytes | str) -> bool:
    return nests_deeper_than(text, MAX_JSON_DEPTH)
