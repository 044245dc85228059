"""Shim for tools that still call ``setup.py``; metadata lives in setup.cfg."""
from setuptools import setup

setup()
