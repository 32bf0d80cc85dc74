"""The ``tracer`` command: ``main(argv) -> int``, one module per verb."""

from tracer.cli.main import main

__all__ = ["main"]
