"""``python -m broker``: the same command as the installed ``highwater`` script.

``highwater dev`` starts every broker this way (``python -m broker serve``), so kio's
types are imported first without hypothesis (``broker.cli.kio_types``).
"""

from broker.cli.kio_types import import_kio_without_hypothesis

import_kio_without_hypothesis()

from broker.command import main  # noqa: E402

main()
