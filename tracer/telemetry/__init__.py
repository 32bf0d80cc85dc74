"""Telemetry: records from the firmware snippets and text logs, assembled into an :class:`InferenceTimeline`.

The timeline's types live in :mod:`tracer.base` (every layer reads them); this package makes them:
:mod:`tracer.telemetry.decoder` from ITM packets, :mod:`tracer.telemetry.logs` from text logs.
"""
