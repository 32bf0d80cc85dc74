"""``python -m tracer``."""

from tracer.cli.main import entry

if __name__ == "__main__":  # not when a Dask worker process (spawned) imports the main module again
    entry()
