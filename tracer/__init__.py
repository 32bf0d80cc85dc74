"""tracer: host-side telemetry and trace analyzer for microcontrollers running neural networks.

The package is cut in layers, each a folder; ``docs/architecture.md`` says what each owns and the
import contracts in ``pyproject.toml`` (checked by ``lint-imports`` and ``tests/test_architecture.py``)
keep them apart. From the bottom up:

* ``base``      the shared vocabulary: the timeline and its columns, engines, typed facts
* ``capture``   the crash-safe capture file that stores raw bytes as received
* ``decode``    TPIU deframing and the ITM/DWT packet decoder (bytes to packets)
* ``elf``       firmware images: symbols, vector names, build IDs
* ``telemetry`` packets and text logs to a timeline of inferences, layers, memory, interrupts, tasks
* ``budget``    what the compiler or the user planned (Vela, Glow, TOML)
* ``analysis``  one ``Analysis`` per timeline: statistics, jitter, interrupts, PMU, memory, findings
* ``export``    views of an analysis: JSON and text report, JUnit, Perfetto, CSV
* ``sources``   where bytes come from (files, TCP trace servers, serial ports, probes, launchers)
* ``pipeline``  composition: a capture through the decoders, any input to a timeline, recording
* ``compare``   one build against another; ``fleet`` many captures on Dask (the fleet extra)
* ``session``   the engine behind the live screen, with no user interface
* ``tui``       the Textual screen
* ``cli``       the ``tracer`` command

The core never imports textual, serial, pylink or pyocd.
"""

__version__ = "0.1.0"
