"""The version, in a module of its own: everything imports it, and it imports nothing."""

__version__ = "0.1.0"
