"""kio's types, imported as they import where ``hypothesis`` is not installed.

kio imports hypothesis whenever it is installed (test and development environments
have it) only to register data-generation strategies for its types, and that costs each
broker process about a third of a second of CPU for something it never uses. Whatever
starts brokers in bulk (``python -m broker``, the test suite's broker launcher)
imports kio's types through here first. Nothing else changes: hypothesis is importable
again afterwards, and kio's types are the same without the strategies.
"""

import sys


def import_kio_without_hypothesis() -> None:
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
