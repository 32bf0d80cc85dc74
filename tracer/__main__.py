"""``python -m tracer``."""

try:
    from tracer.cli.main import entry
except KeyboardInterrupt:  # Ctrl-C while tracer is still loading: an interrupt, said quietly
    raise SystemExit(130) from None

entry()
