"""The Textual front end of ``tracer live`` and ``tracer replay`` (only the CLI imports it, lazily)."""
