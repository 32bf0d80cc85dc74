"""The QEMU demo target: the demo firmware on ``qemu-system-arm -M mps3-an547``, streamed from its UART.

QEMU's Corstone-300 model (Cortex-M55) has no ITM, DWT or NPU, so the demo firmware sends the
same ITM packet bytes over UART0 and takes time from SysTick. QEMU runs with ``-icount shift=0``
(one instruction per virtual nanosecond) and the firmware re-zeroes its time base at the host's
start command, so every run is cycle-for-cycle identical. The UART is a local TCP server
(``-serial tcp:127.0.0.1:PORT,server=on,wait=on``) read as a ``socket://`` serial source
(:class:`~tracer.sources.serial_port.SerialSource`, which keeps the bytes the guest sends the
moment we connect and never loses a read at the end of the stream).

Handshake: the firmware prints ``READY`` (ITM port 0 text), the host answers
``START <inferences> <scenario> [<sample Hz>] [slow=<layer>:<per mille>]`` (the last makes one
layer slower by that much: :class:`Slowdown`); at the end the firmware exits through semihosting
and QEMU's exit status is the firmware's. Scenarios (:data:`SCENARIOS`) make the firmware misbehave
in one known way each (an interrupt in a layer, a missing cache clean, a stack overflow, an arena
too small, another task preempting a layer), show a layer whose work depends on its input by
design, or, ``npu-sampling``, run a Vela command stream as one NPU job on the simulated NPU
while a timer samples it and the CPU at ``sample_hz``; ``firmware_snippets/demo/main.c`` describes
them.

One module although over 400 lines: the command line, the READY/START handshake and the scenarios
are the one contract with the demo firmware.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from tracer.errors import SourceUnavailable, UsageError
from tracer.sources.base import SourceEnded
from tracer.sources.serial_port import SerialSource
from tracer.sources.url import SourceUrl

MACHINE = "mps3-an547"
CPU_HZ = 32_000_000  # the an547 processor clock in QEMU: what SysTick counts
DEMO_TARGET = "demo"
DEMO_ELF = Path("demo") / "tracer_demo.elf"
SCENARIOS = (
    "clean",
    "isr-jitter",
    "missing-clean",
    "stack-overflow",
    "arena-too-small",
    "task-preemption",
    "data-dependent",
    "npu-sampling",
)
SAMPLING_SCENARIO = "npu-sampling"
SAMPLE_HZ_RANGE = (1, 100_000)  # what the firmware's sampling timer accepts
FIRMWARE_DIR_ENV = "TRACER_FIRMWARE_DIR"
READY_MARK = "READY"

INSTALL_HINT = {
    "arm-none-eabi-gcc": "the Arm cross compiler (Debian/Ubuntu: apt-get install --no-install-recommends gcc-arm-none-eabi)",
    "qemu-system-arm": "QEMU for Arm (Debian/Ubuntu: apt-get install --no-install-recommends qemu-system-arm)",
    "make": "make (Debian/Ubuntu: apt-get install make)",
}


# The demo network's layers, in order (firmware_snippets/demo/net.c, g_net; a test keeps them equal).
DEMO_LAYERS = ("conv0", "dw1", "pw2", "dw3", "pw4", "add5", "pool6", "conv7", "gap8", "fc9")


@dataclasses.dataclass(frozen=True)
class Slowdown:
    """A layer of the demo made slower by a share of its own time (``tracer demo --slow pw4:3``).

    Attributes:
        layer: The layer's name in the demo network (conv0, dw1, pw2 ... fc9).
        permille: How much slower, in per mille (30: 3 %).
    """

    layer: str
    permille: int

    @classmethod
    def parse(cls, text: str) -> Slowdown:
        """``LAYER:PCT`` (``pw4:3``, ``conv0:2.5``), percent to one decimal, above 0 and at most 1000."""
        layer, sep, pct = text.partition(":")
        try:
            permille = round(float(pct) * 10)
        except ValueError:
            permille = -1
        if not sep or not layer or " " in layer or not 0 < permille <= 10_000:
            raise UsageError(f"--slow {text}: expected LAYER:PERCENT, e.g. pw4:3 (0.1 to 1000 percent)")
        if layer not in DEMO_LAYERS:  # said now, not by the firmware after a build and a QEMU run
            raise UsageError(f"--slow {text}: the demo has no layer {layer!r}; its layers: {', '.join(DEMO_LAYERS)}")
        return cls(layer, permille)

    @property
    def pct(self) -> float:
        """How much slower, in percent."""
        return self.permille / 10


def firmware_dir() -> Path:
    """The demo firmware sources: ``$TRACER_FIRMWARE_DIR`` if set, else the copy installed with the
    package (``tracer/firmware``, put there by the wheel's build), else ``firmware_snippets`` of the
    checkout an editable install runs from.

    Raises:
        SourceUnavailable: They cannot be found.
    """
    env = os.environ.get(FIRMWARE_DIR_ENV)
    package = Path(__file__).resolve().parent.parent
    installed = package / "firmware"
    path = Path(env) if env else (installed if installed.is_dir() else package.parent / "firmware_snippets")
    if not (path / "Makefile").is_file():
        where = f"{FIRMWARE_DIR_ENV}={env}" if env else "the installed package"
        raise SourceUnavailable(
            f"the demo firmware sources (a firmware_snippets folder with its Makefile) are not at {path} "
            f"({where}); set {FIRMWARE_DIR_ENV} to a firmware_snippets folder"
        )
    return path.resolve()


def default_build_dir(source: Path) -> Path:
    """Where ``make`` builds when no folder is given: ``firmware_snippets/build`` in a checkout, else
    a folder of the user's cache (an installed package's folder is no place for build output).
    """
    if (source.parent / "pyproject.toml").is_file() and (source.parent / "tracer").is_dir():
        return source / "build"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tracer" / f"firmware-build-{_version()}"


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tracer")
    except PackageNotFoundError:
        return "unknown"


def check_tools(build: bool = True) -> None:
    """Raise :class:`SourceUnavailable` naming what to install if a tool is missing."""
    needed = ["qemu-system-arm"] + (["arm-none-eabi-gcc", "make"] if build else [])
    missing = [tool for tool in needed if shutil.which(tool) is None]
    if missing:
        hints = "; ".join(f"{tool}: install {INSTALL_HINT[tool]}" for tool in missing)
        raise SourceUnavailable(f"the QEMU demo needs {', '.join(missing)}, not found on PATH ({hints})")


def build_firmware(build_dir: Path | None = None, target: str = DEMO_TARGET) -> Path:
    """Run ``make`` for ``target`` (up to date: nothing is rebuilt) and return the build folder.

    Raises:
        SourceUnavailable: The build failed (the compiler's last lines are in the message).
    """
    source = firmware_dir()
    out = (build_dir or default_build_dir(source)).resolve()
    command = ["make", "-C", str(source), f"BUILD={out}", target]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceUnavailable(f"cannot build the demo firmware ({' '.join(command)}): {exc}") from None
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise SourceUnavailable(f"building the demo firmware failed ({' '.join(command)}):\n{tail}")
    return out


def demo_elf(build_dir: Path | None = None) -> Path:
    """Build the demo firmware if needed and return its ELF."""
    return build_firmware(build_dir, DEMO_TARGET) / DEMO_ELF


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def qemu_command(elf: Path, port: int, icount_shift: int = 0) -> list[str]:
    """The QEMU command line of the demo."""
    return [
        "qemu-system-arm",
        "-M",
        MACHINE,
        "-display",
        "none",
        "-monitor",
        "none",
        "-no-reboot",
        "-icount",
        f"shift={icount_shift}",
        "-semihosting-config",
        "enable=on,target=native",
        "-serial",
        f"tcp:127.0.0.1:{port},server=on,wait=on",
        "-kernel",
        str(elf),
    ]


class QemuDemoSource:
    """The demo firmware running on QEMU, as a byte source.

    Args:
        elf: The demo firmware.
        inferences: How many inferences the firmware runs.
        scenario: The demo scenario (one of :data:`SCENARIOS`).
        icount_shift: QEMU ``-icount shift`` (0: one instruction per nanosecond).
        ready_timeout: Seconds QEMU may take from its launch to the firmware's READY. Only time
            spent waiting for QEMU counts: host work (building the firmware, importing and
            setting up the decoder, decoding what arrived) never does.
        sample_hz: The sampling timer's rate in the ``npu-sampling`` scenario (None: the firmware's
            default, 1 kHz of emulated time).
        slow: A layer to make slower, or None.
        sync_pin: The firmware calls ``trc_sync_pin`` before each inference (``demo --power``).
    """

    def __init__(
        self,
        elf: Path,
        inferences: int,
        scenario: str = "clean",
        icount_shift: int = 0,
        ready_timeout: float = 20.0,
        sample_hz: int | None = None,
        slow: Slowdown | None = None,
        sync_pin: bool = False,
    ) -> None:
        if inferences < 1:
            raise UsageError(f"--inferences must be at least 1, not {inferences}")
        if scenario not in SCENARIOS:
            raise UsageError(f"unknown scenario {scenario!r}: expected one of {', '.join(SCENARIOS)}")
        if sample_hz is not None and scenario != SAMPLING_SCENARIO:
            raise UsageError(f"a sample rate applies to the {SAMPLING_SCENARIO} scenario only, not {scenario!r}")
        if sample_hz is not None and not SAMPLE_HZ_RANGE[0] <= sample_hz <= SAMPLE_HZ_RANGE[1]:
            raise UsageError(f"sample rate {sample_hz} Hz is outside {SAMPLE_HZ_RANGE[0]}..{SAMPLE_HZ_RANGE[1]} Hz")
        self.sample_hz = sample_hz
        self.elf = Path(elf)
        self.inferences = inferences
        self.scenario = scenario
        self.slow = slow
        self.sync_pin = sync_pin
        self.icount_shift = icount_shift
        self.ready_timeout = ready_timeout
        self.url = f"qemu://{MACHINE}?inferences={inferences}&scenario={scenario}"
        if sample_hz is not None:
            self.url += f"&sample_hz={sample_hz}"
        if slow is not None:
            self.url += f"&slow={slow.layer}:{slow.pct:g}"
        if sync_pin:
            self.url += "&sync_pin=1"
        self.port: int | None = None
        self.exit_code: int | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self._serial: SerialSource | None = None
        self._log: Any = None
        self._pending = bytearray()
        self._waited = 0.0  # seconds spent waiting for QEMU since its launch (connect, READY)

    # -- ByteSource ------------------------------------------------------------------------------
    def open(self) -> None:
        """Start QEMU, connect to its UART and start the firmware."""
        if not self.elf.is_file():
            raise SourceUnavailable(f"{self.elf}: no such firmware image")
        check_tools(build=False)
        handshake = _ReadyWatcher()  # host work, done before QEMU starts
        for attempt in range(3):
            self._waited = 0.0
            self.port = free_port()
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - QEMU's log: qemu_output() reads it after QEMU exits
            try:
                self._process = subprocess.Popen(  # fixed program, our arguments
                    qemu_command(self.elf, self.port, self.icount_shift),
                    stdin=subprocess.DEVNULL,
                    stdout=self._log,
                    stderr=self._log,
                )
            except OSError as exc:
                raise SourceUnavailable(f"cannot start qemu-system-arm: {exc}") from None
            if self._connect():
                break
            self._stop_process()
            if attempt == 2:
                raise SourceUnavailable(f"QEMU did not start: {self.qemu_output() or 'no output'}")
        try:
            self._handshake(handshake)
        except BaseException:  # no READY, QEMU gone, Ctrl-C: do not leave the emulator running
            self.terminate()
            self.close()
            raise

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return UART bytes; raises :class:`SourceEnded` when the firmware has exited."""
        if self._pending:
            data = bytes(self._pending[:max_bytes])
            del self._pending[:max_bytes]
            return data
        return self._uart().read(max_bytes, timeout)

    def close(self) -> None:
        """Disconnect and wait for QEMU to exit (its status is the firmware's)."""
        if self._serial is not None:
            self._serial.close()
            self._serial = None
        if self._process is not None:
            # The firmware has exited by now, unless we stop early (Ctrl-C, timeout): then QEMU
            # keeps running and is killed.
            try:
                self.exit_code = self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._stop_process()
            self._process = None

    def metadata(self) -> dict[str, Any]:
        """Header facts: the UART carries ITM packets, not TPIU-formatted, cycles at 32 MHz."""
        return {
            "source": self.url,
            "encoding": "itm",
            "tpiu": False,
            "cpu_hz": CPU_HZ,
            "firmware_hash": _sha256(self.elf),
            "notes": f"tracer demo on QEMU {MACHINE} (Cortex-M55), -icount shift={self.icount_shift}: "
            "cycles are emulated (instructions, not real CPU cycles); NPU PMU values are simulated",
            "launcher": {
                "machine": MACHINE,
                "firmware": self.elf.name,
                "inferences": self.inferences,
                "scenario": self.scenario,
                "icount_shift": self.icount_shift,
                **({"sample_hz": self.sample_hz} if self.sample_hz is not None else {}),
                **({"slow_layer": self.slow.layer, "slow_pct": self.slow.pct} if self.slow else {}),
            },
        }

    # -- extras ----------------------------------------------------------------------------------
    def qemu_output(self) -> str:
        """What QEMU printed (errors, warnings)."""
        if self._log is None:
            return ""
        self._log.seek(0)
        text = self._log.read().decode("utf-8", "replace").strip()
        return "\n".join(line for line in text.splitlines() if "waiting for connection" not in line)

    def terminate(self) -> None:
        """Stop the emulator now, if it still runs (the user quit before the firmware finished);
        :meth:`close` then has nothing to wait for.
        """
        self._stop_process()

    def wait(self, timeout: float = 10.0) -> int | None:
        """Wait for QEMU to exit; returns its status (None if it is still running)."""
        if self._process is None:
            return self.exit_code
        try:
            self.exit_code = self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        return self.exit_code

    # -- internals -------------------------------------------------------------------------------
    def _connect(self) -> bool:
        """Connect to QEMU's UART server as soon as it listens; False if QEMU exited first."""
        url = SourceUrl.parse(f"socket://127.0.0.1:{self.port}")
        while self._waited < self.ready_timeout:
            start = time.monotonic()
            if self._process is not None and self._process.poll() is not None:
                return False  # QEMU exited: port taken, or a bad command line
            port = SerialSource(url)
            try:
                port.open()
            except SourceUnavailable:
                time.sleep(0.02)
                self._waited += time.monotonic() - start
                continue
            self._waited += time.monotonic() - start
            self._serial = port
            return True
        return False

    def _handshake(self, watcher: _ReadyWatcher) -> None:
        """Wait for the firmware's READY (the time QEMU takes counts, decoding it does not), then start it."""
        while not watcher.ready:
            if self._waited > self.ready_timeout:
                raise SourceUnavailable(
                    f"the demo firmware did not say {READY_MARK} within {self.ready_timeout:g} s of QEMU's start "
                    f"(QEMU: {self.qemu_output() or 'no output'})"
                )
            start = time.monotonic()
            try:
                data = self._uart().read(65536, 0.1)
            except SourceEnded:
                raise SourceUnavailable(
                    f"QEMU exited before the firmware was ready (QEMU: {self.qemu_output() or 'no output'})"
                ) from None
            self._waited += time.monotonic() - start
            self._pending += data
            watcher.feed(data)
        rate = f" {self.sample_hz}" if self.sample_hz is not None else ""
        slow = f" slow={self.slow.layer}:{self.slow.permille}" if self.slow is not None else ""
        sync = " sync" if self.sync_pin else ""
        self._uart().write(f"START {self.inferences} {self.scenario}{rate}{slow}{sync}\n".encode())

    def _uart(self) -> SerialSource:
        if self._serial is None:
            raise SourceEnded(self.url)
        return self._serial

    def _stop_process(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=5)
        if self._process is not None:
            self.exit_code = self._process.returncode


class _ReadyWatcher:
    """Looks for READY in the console text (ITM port 0) of the firmware's first bytes."""

    def __init__(self) -> None:
        from tracer.decode.itm import ItmDecoder  # the decoder loads numpy

        self._decoder = ItmDecoder(hold_timestamps=False)
        self._text = bytearray()

    @property
    def ready(self) -> bool:
        """True once the firmware said READY."""
        return READY_MARK.encode() in self._text

    def feed(self, data: bytes) -> None:
        """Decode the next bytes and keep their port-0 text."""
        from tracer.decode.packets import PacketKind

        batch = self._decoder.feed(data)
        text = batch.is_kind(PacketKind.SWIT) & (batch.b == 0)
        for value, size in zip(batch.a[text].tolist(), batch.c[text].tolist()):
            self._text += int(value).to_bytes(8, "little")[:size]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 16), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def open_qemu_url(url: SourceUrl) -> QemuDemoSource:
    """``qemu://mps3-an547?inferences=N&scenario=clean[&sample_hz=HZ]``: build the demo if needed and run it."""
    if url.location not in ("", MACHINE, "demo"):
        raise UsageError(f"{url.text}: the QEMU demo runs on {MACHINE} only")
    try:
        inferences = int(url.option("inferences", "20") or "20")
        rate = url.option("sample_hz", None)
        sample_hz = int(rate) if rate else None
    except ValueError:
        raise UsageError(f"{url.text}: inferences and sample_hz must be numbers") from None
    check_tools(build=True)
    return QemuDemoSource(demo_elf(), inferences, url.option("scenario", "clean") or "clean", sample_hz=sample_hz)
