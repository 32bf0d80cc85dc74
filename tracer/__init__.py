"""tracer: host-side telemetry and trace analyzer for microcontrollers running neural networks.

The package is cut in layers, each a folder:

* ``sources``   where bytes come from (files, TCP trace servers, serial ports, probes, launchers)
* ``capture``   the crash-safe capture file that stores raw bytes as received
* ``decode``    TPIU deframing and the ITM/DWT packet decoder (the byte-level hot loops)
* ``telemetry`` records from our firmware snippets and text logs, assembled into inferences and layers
* ``budget``    what the compiler or the user planned (Vela, Glow, TOML)
* ``analysis``  per-layer statistics, measured against predicted, findings
* ``export``    renderings: JSON, text, JUnit, Perfetto, CSV
* ``tui``       the Textual app (live and replay)
* ``cli``       the ``tracer`` command

The core (decode, telemetry, budget, analysis, export, capture) never imports textual, serial,
pylink or pyocd; ``tests/test_architecture.py`` enforces it.
"""

__version__ = "0.1.0"
