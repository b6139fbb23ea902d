"""The ``highwater`` command line: ``app`` builds the command tree, one module per command group.

Client commands talk to a broker only through its REST API, so this package imports
the server code lazily, inside ``serve`` and ``dev``, never at module level.
"""
