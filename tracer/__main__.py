"""``python -m tracer``."""

from tracer.cli.signals import interrupt_outside_imports

interrupt_outside_imports()  # before the imports below: an interrupt there is an interrupt, not an error
try:
    from tracer.cli.main import entry
except KeyboardInterrupt:  # Ctrl-C while tracer is still loading: an interrupt, said quietly
    raise SystemExit(130) from None

if __name__ == "__main__":  # not when a Dask worker process (spawned) imports the main module again
    entry()
