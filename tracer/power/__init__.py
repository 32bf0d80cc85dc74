"""Power-meter recordings held against the timeline: energy per layer and per inference.

* :mod:`~tracer.power.recording`: what a recording is (samples of power, digital inputs) and
  :func:`~tracer.power.reading.open_recording`, which picks the reader from the file;
* :mod:`~tracer.power.jls` (Joulescope, through ``pyjls``), :mod:`~tracer.power.csv_files` (the
  CSV of Nordic's Power Profiler, and a plain CSV for any other meter): the readers, streaming in
  chunks;
* :mod:`~tracer.power.edges`: the digital inputs' edges; :mod:`~tracer.power.sync`: target cycles
  fitted to meter time from the firmware's sync marks (or inference edges);
* :mod:`~tracer.power.attribute`: energy per layer, inference, engine and idle, with intervals;
* :mod:`~tracer.power.simulate`: a simulated meter for the demo (labelled simulated).

Meter libraries load lazily, inside the readers: the core never imports one. See docs/energy.md.
"""
