"""The version of mcpsync, in a module of its own so that any layer can read it without
importing the package (and everything ``mcpsync/__init__`` imports).
"""

__version__ = "0.1.0"
