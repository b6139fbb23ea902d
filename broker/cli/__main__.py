"""``python -m broker.cli``: the same command as the installed ``highwater`` script.

The tests and ``highwater dev`` start every broker this way (``python -m broker.cli serve``),
so kio's types are imported here first, with ``hypothesis`` hidden: kio imports hypothesis
whenever it is installed (test and development environments have it) only to register
data-generation strategies for its types, and that costs each broker process about a
third of a second of CPU for something it never uses. Nothing else changes: hypothesis is
importable again afterwards, and kio's types are the same without the strategies.
"""

import sys


def _import_kio_without_hypothesis() -> None:
    """Import ``kio.static.primitive`` as it imports where hypothesis is not installed.

    kio decides once, when ``kio.static._phantom`` is first imported, whether to register
    strategies: ``None`` in ``sys.modules`` makes its ``import hypothesis.strategies`` fail
    with ``ImportError``, the case it already handles.
    """
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
    try:
        import kio.static.primitive  # noqa: F401
    finally:
        del sys.modules["hypothesis"]


_import_kio_without_hypothesis()

from broker.cli.app import main  # noqa: E402

main()
