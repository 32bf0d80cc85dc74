"""The vocabulary every layer shares: what ran, when, on which engine, and what was lost on the way.

:mod:`tracer.base.timeline` holds the :class:`~tracer.base.timeline.InferenceTimeline` and its
parts, :mod:`tracer.base.exceptions` the architecture's exception names. Any layer may import this
package, and it imports no other part of tracer: a budget reader names an ``Engine`` and a probe
poller an ``ArenaSample`` without reaching into the telemetry decoder.
"""
