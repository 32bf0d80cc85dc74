"""The ``tracer`` command: ``tracer.cli.main.main(argv) -> int``, one module per verb (``cmd_<verb>.py``)."""
