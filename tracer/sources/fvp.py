"""Running an Arm FVP and recording its UART: ``tracer record fvp -o x.trace -- FVP_... -a app.axf``.

The launcher starts the FVP command line it is given, exactly as given, then reads the model's
UART in one of two ways:

* **telnet** (the FVP's default): the FVP prints
  ``telnetterminal0: Listening for serial connection on port 5000`` and we connect to that port.
  ``?terminal=N`` picks another terminal (``telnetterminal1`` ... for UART1 ...).
* **stdout**: the command routes UART0 to standard output with
  ``-C mps3_board.uart0.out_file=-`` (``mps4_board.uart0.out_file=-`` on Corstone-320), and we read
  the FVP's standard output. The FVP's own messages share that stream.

The bytes are recorded as received (no telnet processing unless ``?telnet=strip``; whether the
FVP escapes 0xFF as a telnet server would is not documented). When the command asks the Ethos-U
model for a PMU trace (``-C ethosu.extra_args=--pmu-trace FILE``), the launcher knows where to find
it after the run. CPU timings from an FVP are model estimates: the capture says so.
"""

from __future__ import annotations

import collections
import os
import queue
import re
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from tracer.errors import SourceUnavailable, UsageError
from tracer.sources.base import SourceEnded
from tracer.sources.url import SourceUrl

BANNER = re.compile(rb"telnetterminal(\d+): Listening for serial connection on port (\d+)")
STDOUT_UART = re.compile(r"(?:^|\.)uart0\.out_file=['\"]?-['\"]?$")
PMU_TRACE = re.compile(r"--pmu-trace[= ]+(\S+)")
MAX_NOTES = 200
TAIL_LINES = 20
IAC = 0xFF


def is_fvp_source(text: str) -> bool:
    """True for ``fvp`` and ``fvp://...`` (the FVP launcher), which take a command after ``--``."""
    return text == "fvp" or text.startswith("fvp:")


def pmu_trace_path(command: list[str]) -> Path | None:
    """The PMU trace file a command line asks the FVP to write, or None."""
    for arg in command:
        found = PMU_TRACE.search(arg)
        if found:
            return Path(found.group(1).strip("'\""))
    return None


def uses_stdout_uart(command: list[str]) -> bool:
    """True if the command routes UART0 to the FVP's standard output."""
    return any(STDOUT_UART.search(arg) for arg in command)


class FvpSource:
    """An FVP process and its UART.

    Args:
        url: ``fvp`` or ``fvp://?terminal=0&telnet=raw|strip&timeout=30``.
        command: The FVP command line (program and arguments).
        popen: Process factory (tests pass a stand-in; default :class:`subprocess.Popen`).
        connect_timeout: Seconds to wait for the banner and the connection.
    """

    def __init__(
        self,
        url: str,
        command: list[str],
        *,
        popen: Callable[..., subprocess.Popen[bytes]] = subprocess.Popen,
        connect_timeout: float | None = None,
    ) -> None:
        if not command:
            raise UsageError(
                "the FVP launcher needs the FVP command line after --, e.g. "
                "tracer record fvp -o run.trace -- FVP_Corstone_SSE-300_Ethos-U55 -a app.axf"
            )
        parsed = SourceUrl.parse(url if "://" in url else "fvp://")
        self.url = url
        self.command = list(command)
        self._popen = popen
        try:
            self.terminal = int(parsed.option("terminal", "0") or 0)
            self._timeout = (
                connect_timeout if connect_timeout is not None else float(parsed.option("timeout", "60") or 60)
            )
        except ValueError:
            raise UsageError(f"{url}: terminal must be a number and timeout seconds") from None
        telnet = parsed.option("telnet", "raw")
        if telnet not in ("raw", "strip"):
            raise UsageError(f"{url}: telnet must be raw or strip, not {telnet!r}")
        self._strip_telnet = telnet == "strip"
        self.mode = "stdout" if uses_stdout_uart(self.command) else "telnet"
        self.pmu_trace = pmu_trace_path(self.command)
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._chunks: queue.Queue[bytes | None] = queue.Queue()
        self._banner: queue.Queue[tuple[int, int]] = queue.Queue()
        self._lines: collections.deque[str] = collections.deque(maxlen=TAIL_LINES)  # for output_tail
        self._notes: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._telnet_state = 0
        self._threads: list[threading.Thread] = []

    # -- ByteSource ------------------------------------------------------------------------------
    def open(self) -> None:
        """Start the FVP and connect to its UART."""
        try:
            self._proc = self._popen(
                self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        except FileNotFoundError:
            raise SourceUnavailable(
                f"{self.command[0]}: not found; install the Arm FVP (e.g. Corstone-300 Ecosystem FVP) "
                "and put it on PATH, or give its full path"
            ) from None
        except OSError as exc:
            raise SourceUnavailable(f"cannot start {self.command[0]}: {exc.strerror}") from None
        assert self._proc.stdout is not None and self._proc.stderr is not None
        self._spawn(self._pump_stdout, self._proc.stdout)
        self._spawn(self._pump_stderr, self._proc.stderr)
        if self.mode == "telnet":
            self._connect_telnet()

    def read(self, max_bytes: int = 65536, timeout: float = 0.1) -> bytes:
        """Return UART bytes; :class:`SourceEnded` when the FVP exits or closes the port."""
        if self.mode == "stdout":
            return self._read_queue(timeout)
        assert self._sock is not None, "open() first"
        self._sock.settimeout(timeout)
        try:
            data = self._sock.recv(max_bytes)
        except TimeoutError:
            return b""
        except OSError:
            data = b""  # the FVP went away; its exit status says whether that was an error
        if not data:
            self._finish()
        return self._telnet(data) if self._strip_telnet else data

    def close(self) -> None:
        """Close the port and stop the FVP if it still runs."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        for thread in self._threads:
            thread.join(timeout=1)

    def metadata(self) -> dict[str, Any]:
        """The command, the UART and the model-estimate label."""
        meta: dict[str, Any] = {
            "source": self.url,
            "launcher": "fvp",
            "fvp_command": shlex.join(self.command),
            "fvp_uart": f"telnet:{self.port}" if self.mode == "telnet" else "stdout",
            "cpu_timing": "model estimate (an FVP is not cycle-accurate for the CPU)",
        }
        if self.pmu_trace is not None:
            meta["fvp_pmu_trace"] = str(self.pmu_trace)
        return meta

    def drain_events(self) -> list[dict[str, Any]]:
        """FVP output lines (not UART data) since the last call, as capture notes."""
        with self._lock:
            notes, self._notes = self._notes, []
        return notes

    def wait(self, timeout: float = 30.0) -> int | None:
        """Wait for the FVP to exit (it writes the PMU trace then); its exit status or None."""
        if self._proc is None:
            return None
        try:
            return self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    @property
    def output_tail(self) -> str:
        """The FVP's last lines of its own output, for error messages."""
        with self._lock:
            return "\n".join(self._lines)

    # -- internals -------------------------------------------------------------------------------
    def _spawn(self, target: Callable[[IO[bytes]], None], stream: IO[bytes]) -> None:
        thread = threading.Thread(target=target, args=(stream,), daemon=True, name="fvp-output")
        thread.start()
        self._threads.append(thread)

    def _pump_stdout(self, stream: IO[bytes]) -> None:
        fd = stream.fileno()
        pending = b""
        while True:
            block = os.read(fd, 65536)
            if not block:
                break
            if self.mode == "stdout":
                self._chunks.put(block)
                continue
            pending += block
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._line(line)
        if pending:
            self._line(pending)
        self._chunks.put(None)

    def _pump_stderr(self, stream: IO[bytes]) -> None:
        for line in iter(stream.readline, b""):
            self._line(line.rstrip(b"\n"), stream="stderr")

    def _line(self, raw: bytes, stream: str = "stdout") -> None:
        found = BANNER.search(raw)
        if found:
            self._banner.put((int(found.group(1)), int(found.group(2))))
        text = raw.decode("utf-8", "replace").rstrip("\r")
        with self._lock:
            self._lines.append(text)
            if len(self._notes) < MAX_NOTES:
                self._notes.append({"event": "fvp output", "stream": stream, "line": text})

    def _connect_telnet(self) -> None:
        deadline = time.monotonic() + self._timeout
        while self.port is None:
            left = deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise SourceUnavailable(
                    f"the FVP announced no telnetterminal{self.terminal} within {self._timeout:.0f} s; "
                    f"its output:\n{self.output_tail}"
                )
            try:
                number, port = self._banner.get(timeout=min(left, 0.1))
            except queue.Empty:
                if self._proc is not None and self._proc.poll() is not None:
                    self._exited_early()
                continue
            if number == self.terminal:
                self.port = port
        while True:
            try:
                self._sock = socket.create_connection(("127.0.0.1", self.port), timeout=1.0)
                return
            except OSError as exc:
                if time.monotonic() >= deadline or (self._proc is not None and self._proc.poll() is not None):
                    self.close()
                    raise SourceUnavailable(f"cannot connect to the FVP's UART on port {self.port}: {exc}") from None
                time.sleep(0.05)

    def _exited_early(self) -> None:
        code = self._proc.returncode if self._proc else None
        for thread in self._threads:
            thread.join(timeout=1)
        raise SourceUnavailable(
            f"{self.command[0]} exited with status {code} before opening its UART; its output:\n{self.output_tail}"
        )

    def _read_queue(self, timeout: float) -> bytes:
        try:
            block = self._chunks.get(timeout=timeout)
        except queue.Empty:
            return b""
        if block is None:
            self._chunks.put(None)  # stay ended for later reads
            self._finish()
        parts = [block]
        while True:  # hand over everything already queued in one read
            try:
                more = self._chunks.get_nowait()
            except queue.Empty:
                break
            if more is None:
                self._chunks.put(None)
                break
            parts.append(more)
        return b"".join(p for p in parts if p)

    def _finish(self) -> None:
        code = self.wait(timeout=10)
        message = f"the FVP exited with status {code}" if code is not None else "the FVP closed its UART"
        raise SourceEnded(message)

    def _telnet(self, data: bytes) -> bytes:
        """Drop telnet commands (IAC WILL/WONT/DO/DONT x, IAC SB ... IAC SE); IAC IAC is 0xFF."""
        out = bytearray()
        state = self._telnet_state
        for byte in data:
            if state == 0:
                if byte == IAC:
                    state = 1
                else:
                    out.append(byte)
            elif state == 1:  # after IAC
                if byte == IAC:
                    out.append(IAC)
                    state = 0
                elif byte in (251, 252, 253, 254):
                    state = 2
                elif byte == 250:
                    state = 3
                else:
                    state = 0
            elif state == 2:  # option byte of WILL/WONT/DO/DONT
                state = 0
            elif state == 3:  # inside SB
                state = 4 if byte == IAC else 3
            else:  # IAC inside SB
                state = 0 if byte == 240 else 3
        self._telnet_state = state
        return bytes(out)
