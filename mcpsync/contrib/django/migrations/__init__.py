"""Database migrations of the integration's token model (Django finds them by this layout).

May import: Django's migration framework only.
"""
