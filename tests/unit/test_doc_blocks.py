"""How the README test finds the blocks it runs and aims them at a test cluster."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.readme_blocks import for_cluster, readme_blocks

TEXT = """# title

<!-- not run: starts the cluster -->
```sh
make run
```

```sh
curl -s localhost:9092/v3/clusters
```

```text
offset: 0 1 2
```

```python
print("hi")
```
"""


def test_blocks_are_found_in_order_with_what_runs() -> None:
    blocks = readme_blocks(TEXT)
    assert [(b.line, b.language, b.run) for b in blocks] == [
        (4, "sh", False),
        (8, "sh", True),
        (12, "text", False),
        (16, "python", True),
    ]
    assert blocks[1].code == "curl -s localhost:9092/v3/clusters\n"
    assert [b.kind for b in blocks] == ["shell", "shell", None, "python"]


def test_an_unclosed_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="line 1"):
        readme_blocks("```sh\necho\n")


def test_make_run_addresses_and_the_venv_move_to_the_test_cluster() -> None:
    code = 'curl localhost:9092/x; Producer("http://127.0.0.1:9094"); curl 127.0.0.1:9095 :8080; .venv/bin/highwater'
    assert for_cluster(code, 30000, Path("/v/bin")) == (
        'curl localhost:30000/x; Producer("http://127.0.0.1:30002"); curl 127.0.0.1:9095 :8080; /v/bin/highwater'
    )
