"""``python -m broker.cli``: the same command as the installed ``highwater`` script.

``highwater dev`` starts every broker this way (``python -m broker.cli serve``), so kio's
types are imported first without hypothesis (``broker.cli.kio_types``).
"""

from broker.cli.kio_types import import_kio_without_hypothesis

import_kio_without_hypothesis()

from broker.cli.app import main  # noqa: E402

main()
