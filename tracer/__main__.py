"""``python -m tracer``."""

from tracer.cli.main import entry

entry()
