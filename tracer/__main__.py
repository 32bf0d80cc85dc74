"""``python -m tracer``."""

try:
    from tracer.cli.main import entry
except KeyboardInterrupt:  # Ctrl-C while tracer is still loading: an interrupt, said quietly
    raise SystemExit(130) from None

if __name__ == "__main__":  # not when a Dask worker process (spawned) imports the main module again
    entry()
