"""Render ``docs/rest-compat.md`` from the operations table: ``python -m tests.rest_spec.render > docs/rest-compat.md``.

``test_render`` fails when the committed document differs from this rendering, so the
note always says what the table says, and the table is what the conformance suite checks.
"""

from __future__ import annotations

from collections import Counter

from tests.rest_spec.operations import GENERAL_DIFFERENCES, OPERATIONS, SPEC_PREFIX, SpecOperation

VERDICT_TITLES = {"implemented": "implemented", "different": "different", "not_served": "not served"}
HEADER = """# REST Proxy v3 compatibility

highwater's `/v3` routes follow Confluent's REST Proxy v3 API, as its published OpenAPI
document (`confluentinc/kafka-rest`, `api/v3/openapi.yaml`) describes it. That document
is under the Confluent Community License, so it is not kept in this repository: its
shapes are restated as this project's own pydantic models, named after the spec's
schemas (`tests/rest_spec/models.py`), and the table below is
`tests/rest_spec/operations.py`, one row per operation of the spec.

Every operation marked *implemented* or *different* is driven against a live 3-broker
cluster by `tests/rest_spec/test_conformance.py`, and each answer, success or error, is
validated strictly against the spec's model for its status (a string where the spec has
an integer fails, a date-time must be an RFC 3339 string). The suite fails if a served
operation goes unexercised, if a route of the spec exists that the table calls not
served (or the reverse), and if this page differs from the table. Regenerate it with

    python -m tests.rest_spec.render > docs/rest-compat.md
"""


RENAMED = """## Fields highwater renamed to take the spec's shapes

Where an older highwater answer used a spec name for something else, the spec's
meaning won and highwater's data moved to a name of its own:

| answer | before | now |
|---|---|---|
| partition | `replicas`: broker ids | `replicas`: link to the replicas; ids in `replica_ids` |
| topic | `configs`: inline `{name, value}` list | `configs`: link to the configs; overrides inline in `config_values` |
| consumer group member | `assignments`: inline list | `assignments`: link; partitions inline in `assigned_partitions` |
| consumer group | `state`: `Stable`, `Empty`... | `state`: `STABLE`, `EMPTY`...; `type` and `is_mixed_consumer_group` added |
| lag row | `consumer_id`, `client_id`: null when no member owns the partition | `""` then; `instance_id` null |
| lag summary | `group_id`; nulls when no lag is known | `consumer_group_id`; `""` and -1 then; links `max_lag_consumer`, `max_lag_partition` |
| produce reports | `timestamp`: ms since the epoch | `timestamp`: RFC 3339 date-time; ms in `timestamp_ms` |
| create an existing topic | 409, error_code 40902 | 400, error_code 40002 (`error` still `TOPIC_ALREADY_EXISTS`) |
| create with `validate_only` | refused (unknown field) | checked, nothing created, 200 |

Every resource but an ACL also gained `metadata.resource_name` (`crn:///kafka=<cluster>/topic=<t>...`)
and the spec's other links (`acls`, `broker_configs`, `consumer_groups`,
`partition_reassignments`, a broker's `configs` and `partition_replicas`, a partition's
`leader` and `reassignment`); a broker gained `host` and `port`.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _row(index: int, op: SpecOperation) -> str:
    name = f"`{op.name}`" if op.named_by_spec else f"`{op.name}` (unnamed in the spec)"
    path = f"`{op.method} {SPEC_PREFIX}{op.path}`"
    return f"| {index} | {name} | {path} | {VERDICT_TITLES[op.verdict]} | {_cell(op.reason)} |"


def render() -> str:
    counts = Counter(op.verdict for op in OPERATIONS)
    lines = [
        HEADER,
        "## Counts",
        "",
        f"Of the spec's {len(OPERATIONS)} operations: **{counts['implemented']} implemented**, "
        f"**{counts['different']} different**, **{counts['not_served']} not served**.",
        "",
        "## What holds for every served operation",
        "",
        *(f"- {text}" for text in GENERAL_DIFFERENCES),
        "",
        RENAMED,
        "## Operations",
        "",
        "| # | Operation | Method and path | Verdict | Reason |",
        "|---|---|---|---|---|",
        *(_row(index, op) for index, op in enumerate(OPERATIONS, start=1)),
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(render(), end="")
