"""README.md's fenced code blocks, as the README test runs them.

A block runs when its language is a shell (``sh``, ``bash``) or ``python``, unless the
line just above its opening fence is an HTML comment starting with ``<!-- not run``
(invisible on a rendered page; it says why, e.g. "it starts the cluster"). Blocks of
any other language (``text`` diagrams) are prose.

``for_cluster`` rewrites a block for a test cluster: the ``make run`` addresses
(``127.0.0.1:9092``-``9094``, also as ``localhost``) become the test cluster's ports
and ``.venv/bin/`` becomes the directory of the interpreter running the tests; nothing
else changes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

RUN_LANGUAGES = {"sh": "shell", "bash": "shell", "python": "python"}
NOT_RUN_MARKER = "<!-- not run"
MAKE_RUN_BASE_PORT = 9092
MAKE_RUN_BROKERS = 3
_FENCE = re.compile(r"^```(\S*)\s*$")
_ADDRESS = re.compile(r"\b(localhost|127\.0\.0\.1):(\d+)\b")


@dataclass(frozen=True)
class Block:
    line: int
    """1-based line of the opening fence."""
    language: str
    code: str
    run: bool

    @property
    def kind(self) -> str | None:
        """``shell``, ``python``, or None for a block that is not code to run."""
        return RUN_LANGUAGES.get(self.language)


def readme_blocks(text: str) -> list[Block]:
    """Every fenced block of ``text`` in order; an unclosed fence is an error."""
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next((i for i in range(index + 1, len(lines)) if lines[i].startswith("```")), None)
        if end is None:
            raise ValueError(f"README line {index + 1}: code block never closed")
        above = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        language = opening.group(1)
        run = language in RUN_LANGUAGES and not above.startswith(NOT_RUN_MARKER)
        blocks.append(Block(index + 1, language, "\n".join(lines[index + 1 : end]) + "\n", run))
        index = end + 1
    return blocks


def for_cluster(code: str, base_port: int, bin_dir: Path) -> str:
    """``code`` aimed at the cluster whose broker ``i`` listens on ``base_port + i - 1``."""

    def moved(match: re.Match[str]) -> str:
        broker = int(match.group(2)) - MAKE_RUN_BASE_PORT
        if not 0 <= broker < MAKE_RUN_BROKERS:
            return match.group(0)
        return f"{match.group(1)}:{base_port + broker}"

    return _ADDRESS.sub(moved, code).replace(".venv/bin/", f"{bin_dir}/")
