"""``python -m broker.cli``: the same command as the installed ``highwater`` script."""

from broker.cli.app import main

main()
