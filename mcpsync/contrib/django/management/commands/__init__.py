"""``manage.py mcp``: see :mod:`.mcp`.

May import: :mod:`mcpsync.contrib.django` and what it may import.
"""
