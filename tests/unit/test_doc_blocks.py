"""How the docs test finds the blocks it runs, and what a page's examples may import.

The last two tests read the real pages: every page is listed, and every Python block
imports only what ``make run`` installs plus the extras its own page tells the reader
to install, so an example cannot need a package the reader was never told about.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from tests.support.doc_blocks import (
    DOC_PAGES,
    MAKE_RUN_EXTRAS,
    REPO_ROOT,
    allowed_distributions,
    missing_imports,
    page_blocks,
    page_extras,
    read_page,
    with_interpreter,
)

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
    blocks = page_blocks("page.md", TEXT)
    assert [(b.line, b.language, b.run) for b in blocks] == [
        (4, "sh", False),
        (8, "sh", True),
        (12, "text", False),
        (16, "python", True),
    ]
    assert blocks[1].code == "curl -s localhost:9092/v3/clusters\n"
    assert [b.kind for b in blocks] == ["shell", "shell", None, "python"]
    assert blocks[3].where == "page.md line 16"


def test_an_unclosed_block_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"page\.md line 1"):
        page_blocks("page.md", "```sh\necho\n")


def test_only_the_venv_moves_and_addresses_stay_as_documented() -> None:
    code = 'curl localhost:9092/x; Producer("http://127.0.0.1:9094"); .venv/bin/highwater'
    assert with_interpreter(code, Path("/v/bin")) == (
        'curl localhost:9092/x; Producer("http://127.0.0.1:9094"); /v/bin/highwater'
    )


def test_a_page_names_the_extras_it_asks_for() -> None:
    assert page_extras("run `.venv/bin/pip install -e '.[spark]'` first") == {"spark"}
    assert page_extras(".venv/bin/pip install -e '.[spark,bench]'") == {"spark", "bench"}
    assert page_extras("pip install -e '.[spark]'") == set()


def test_an_import_outside_the_install_is_named() -> None:
    allowed = allowed_distributions(set(MAKE_RUN_EXTRAS))
    code = "import json\nimport aiohttp\nfrom producer import Producer\nfrom pyspark.sql import SparkSession\n"
    assert missing_imports(code, allowed) == {"pyspark"}
    assert missing_imports(code, allowed_distributions({*MAKE_RUN_EXTRAS, "spark"})) == set()


def test_every_page_is_listed() -> None:
    on_disk = {"README.md"} | {f"docs/{path.name}" for path in (REPO_ROOT / "docs").glob("*.md")}
    assert on_disk == set(DOC_PAGES)


@pytest.mark.parametrize("page", DOC_PAGES)
def test_examples_import_only_what_the_reader_installed(page: str) -> None:
    text = (REPO_ROOT / page).read_text()
    allowed = allowed_distributions({*MAKE_RUN_EXTRAS, *page_extras(text)})
    for block in read_page(page):
        if block.kind == "python":
            assert missing_imports(block.code, allowed) == set(), f"{block.where}: not installed by make run"


def test_make_run_installs_what_the_pages_are_checked_against() -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert f"pip install -qq -e '.[{','.join(MAKE_RUN_EXTRAS)}]'" in makefile


def test_the_suite_installs_every_extra_a_page_asks_for() -> None:
    """The docs test runs a page's blocks without its ``pip install`` line, so the test extra must cover it."""
    extras = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    asked = {extra for page in DOC_PAGES for extra in page_extras((REPO_ROOT / page).read_text())}
    assert asked, "no page asks for an extra: docs/spark.md should"
    for extra in asked:
        assert set(extras[extra]) <= set(extras["test"]), f"the test extra lacks part of {extra!r}"


def test_the_readme_opens_with_the_two_commands_and_stays_short() -> None:
    """``make run``/``make test`` first; the manual lives in ``docs/``."""
    text = (REPO_ROOT / "README.md").read_text()
    blocks = read_page("README.md")
    assert text.startswith("# highwater\n")
    assert not blocks[0].run and "make run" in blocks[0].code and "make test" in blocks[0].code
    assert blocks[0].line < 10
    assert len(text.splitlines()) <= 200
    for page in DOC_PAGES[1:]:
        assert f"({page})" in text, f"the README's map of the manual leaves out {page}"


def test_only_code_blocks_run() -> None:
    for page in DOC_PAGES:
        for block in read_page(page):
            assert block.kind is not None or not block.run, block.where


def test_the_suites_own_package_is_importable_only_by_a_page_for_contributors() -> None:
    code = "from tests.support.cluster import ClusterSpec\n"
    assert missing_imports(code, allowed_distributions(set(MAKE_RUN_EXTRAS))) == {"tests"}
    assert missing_imports(code, allowed_distributions({*MAKE_RUN_EXTRAS, "test"})) == set()
