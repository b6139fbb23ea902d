"""``python -m broker.bench.latency_trace`` against three real brokers: every stage is traced.

The budget table is only as good as its joins: each critical-path stage must be found
for every measured request, so a trace point that is lost or no longer carries the
offset it concerns (and would silently drop a row) fails here. Requests that overlapped a
broker's logging of its kept trace events are left out, and the table says how many. The echo floor is measured
by the same client in the same run, and a replicated write cannot beat one round trip.
"""

from __future__ import annotations

import re

from broker.bench.latency_trace import ECHO_STAGE, SIDE_STAGES, STAGES, run

COUNT = 20


def test_the_budget_table_has_every_stage_for_every_request() -> None:
    table = run(count=COUNT, warmup=5, rate=100.0)
    left_out = re.search(r"^-- (\d+) requests left out", table, re.MULTILINE)
    measured = COUNT - (int(left_out.group(1)) if left_out else 0)
    assert measured >= COUNT // 2, table
    rows = {}
    for line in table.splitlines():
        match = re.match(r"^(.+?)\s+(\d+)\s+(\d+)\s+(\d+)$", line)
        if match:
            rows[match.group(1)] = (int(match.group(2)), int(match.group(3)), int(match.group(4)))
    for name, _, _ in (*STAGES, *SIDE_STAGES):
        assert name in rows, f"stage {name!r} missing from\n{table}"
        assert rows[name][2] == measured, f"stage {name!r} joined {rows[name][2]} of {measured} requests"
    p50, p99, _ = rows["client round trip"]
    assert 0 < p50 <= p99
    echo_p50, _, echo_count = rows[ECHO_STAGE]
    assert echo_count == COUNT and 0 < echo_p50 < p50
