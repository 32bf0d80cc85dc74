"""Composition: a capture or a source through the decoders, for the CLI, the session and the sources.

The layers below stay apart (``decode`` takes bytes and knows no capture file; ``telemetry`` takes
packets); this package puts them together: :mod:`tracer.pipeline.capture` streams a capture's
chunks into the trace and telemetry decoders, :mod:`tracer.pipeline.load` tells a capture, a raw
trace and a text log apart and reads each into a timeline, and :mod:`tracer.pipeline.record`
records a source into a capture.
"""
