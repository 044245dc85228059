"""Django management commands of the integration (Django finds them by this layout).

May import: :mod:`mcpsync.contrib.django` and what it may import.
"""
