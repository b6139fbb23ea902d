"""``docs/kafka-clients.md`` lists exactly the APIs the listener serves, with their keys and version ranges.

ApiVersions advertises ``broker.kafka.apis.API_TABLE``; this reads the page's table back
and compares, so a served API missing from the page, a removed one still listed, or a
version range changed on one side only fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from broker.kafka.apis import API_TABLE

PAGE = Path(__file__).resolve().parents[3] / "docs" / "kafka-clients.md"
ROW = re.compile(r"^\| (?P<name>[A-Za-z]+) \| (?P<key>\d+) \| (?P<versions>\d+(?:-\d+)?) \| .+\|$")


def test_the_page_lists_every_served_api_with_its_key_and_versions() -> None:
    documented = {
        (m["name"], int(m["key"]), m["versions"]) for line in PAGE.read_text().splitlines() if (m := ROW.match(line))
    }
    served = {
        (
            api.name,
            api.key,
            f"{api.versions.min_version}"
            if api.versions.min_version == api.versions.max_version
            else f"{api.versions.min_version}-{api.versions.max_version}",
        )
        for api in API_TABLE
    }
    assert documented == served
