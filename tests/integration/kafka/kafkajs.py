"""Running one of ``js/``'s kafkajs scripts on Debian's Node (``make kafkajs`` installs kafkajs under ``.venv``).

Each script prints one JSON line last: ``{"ok": true, ...what it saw}`` or ``{"ok": false, "error": ...}``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
KAFKAJS_MODULES = REPO / ".venv" / "kafkajs" / "node_modules"
SCRIPTS = Path(__file__).with_name("js")


def run_kafkajs(script: str, *args: object, timeout_s: float = 120) -> dict[str, Any]:
    """What ``js/<script>`` saw, run with ``args``; it must end ``ok`` (its output is the failure's message)."""
    done = subprocess.run(
        ["node", str(SCRIPTS / script), *map(str, args)],
        env={**os.environ, "NODE_PATH": str(KAFKAJS_MODULES)},
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    lines = done.stdout.strip().splitlines()
    assert lines, f"{script} printed nothing: {done.stderr}"
    answer: dict[str, Any] = json.loads(lines[-1])
    assert answer.get("ok"), done.stdout + done.stderr
    return answer
