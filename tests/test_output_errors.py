"""Writes that fail (a full disk, /dev/full, stdout on a full device or a closed pipe) and Ctrl-C at
any moment: a message naming the output and the OS's reason, and an exit code of the contract
(2 for an output that cannot be written, 130 for an interrupt), never a traceback
(docs/limits.md, "Outputs")."""

from __future__ import annotations

import errno
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tracer.cli.main import main

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "captures" / "demo.trace"
BUDGET = ROOT / "captures" / "demo_budget.toml"
FULL = "/dev/full"

# Every verb that writes a file with -o (record and live write captures, tested below).
WRITING_VERBS = [
    ["decode", DEMO, "--format", "text"],
    ["decode", DEMO, "--format", "ndjson"],
    ["decode", DEMO, "--format", "stats"],
    ["report", DEMO],
    ["report", DEMO, "--format", "json"],
    ["check", DEMO, "--budget", BUDGET],
    ["check", DEMO, "--budget", BUDGET, "--format", "junit"],
    ["check", DEMO, "--budget", BUDGET, "--format", "json"],
    ["budget", BUDGET],
    ["budget", BUDGET, "--format", "json"],
    ["export", DEMO, "--format", "perfetto"],
    ["export", DEMO, "--format", "chrome-json"],
    ["export", DEMO, "--format", "csv"],
    ["export", DEMO, "--format", "raw"],
]


class FullStream(io.TextIOBase):
    """stdout on a full device: every write fails as the OS says (ENOSPC, or EPIPE for a closed pipe)."""

    def __init__(self, code: int) -> None:
        self.code = code

    def write(self, text: str) -> int:
        raise OSError(self.code, os.strerror(self.code))

    def flush(self) -> None:
        raise OSError(self.code, os.strerror(self.code))

    @property
    def buffer(self) -> FullStream:  # binary writes go through .buffer
        return self


def _run(monkeypatch: pytest.MonkeyPatch, stdout: object, *args: object) -> tuple[int, str]:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout)
    monkeypatch.setattr(sys, "stderr", err)
    code = main([str(a) for a in args])
    monkeypatch.undo()
    return code, err.getvalue()


@pytest.mark.parametrize("argv", WRITING_VERBS, ids=lambda a: " ".join(str(x) for x in a[:1] + a[2:]))
def test_output_to_dev_full_says_so_and_exits_2(argv: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    code, err = _run(monkeypatch, io.StringIO(), *argv, "-o", FULL)
    assert code == 2, err
    assert err.rstrip().endswith(f"tracer: error: cannot write {FULL}: No space left on device"), err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv", [*WRITING_VERBS, ["list"]], ids=lambda a: " ".join(str(x) for x in a[:1] + a[2:]))
@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EPIPE], ids=["full", "closed-pipe"])
def test_stdout_that_fails_says_so_and_exits_2(argv: list[object], code: int, monkeypatch: pytest.MonkeyPatch) -> None:
    extra = ["-o", "-"] if argv[0] == "export" else []
    result, err = _run(monkeypatch, FullStream(code), *argv, *extra)
    assert result == 2, err
    assert err.rstrip().endswith(f"tracer: error: cannot write stdout: {os.strerror(code)}"), err


def test_stderr_that_fails_does_not_turn_into_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Warnings go to stderr; when stderr itself is broken there is nobody to tell, but the exit code says it."""
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    monkeypatch.setattr(sys, "stderr", FullStream(errno.EPIPE))
    assert main(["report", "/nonexistent.trace"]) == 3


def test_record_to_a_full_device_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = tmp_path / "raw.swo"
    raw.write_bytes(bytes(range(256)) * 400)
    code, err = _run(monkeypatch, io.StringIO(), "record", f"file://{raw}", "-o", FULL, "--force")
    assert code == 2, err
    assert f"cannot write {FULL}: No space left on device" in err and "Traceback" not in err


def test_subprocess_stdout_on_dev_full_and_a_closed_pipe() -> None:
    """The real thing: the interpreter's own flush at exit must not print 'Exception ignored'."""
    with open(FULL, "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "tracer", "decode", str(DEMO)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "tracer: error: cannot write stdout: No space left on device"
    reader, writer = os.pipe()
    os.close(reader)  # nobody will read
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "decode", str(DEMO)], stdout=writer, stderr=subprocess.PIPE, text=True
    )
    os.close(writer)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert err.strip().splitlines()[-1] == "tracer: error: cannot write stdout: Broken pipe"
    assert "Exception ignored" not in err and "Traceback" not in err


def test_an_interrupt_inside_an_import_is_raised_once_the_import_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry point's handler holds Ctrl-C while a module is being imported (a library may turn
    the interrupt into an error of its own) and raises KeyboardInterrupt right after it."""
    from tracer.cli.signals import interrupt_outside_imports

    (tmp_path / "interrupted_while_imported.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
        "for _ in range(50):\n    time.sleep(0.002)\nDONE = True\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    previous = signal.getsignal(signal.SIGINT)
    try:
        interrupt_outside_imports()
        with pytest.raises(KeyboardInterrupt):
            import interrupted_while_imported  # noqa: F401 - imported for what importing it does

            time.sleep(2)  # the held interrupt is raised here, well before the end
        assert sys.modules["interrupted_while_imported"].DONE
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.modules.pop("interrupted_while_imported", None)


def test_a_held_interrupt_goes_to_the_handler_in_place_once_the_import_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C held during an import is raised again afterwards, for whichever handler is in place
    then: here the module installs its own before its import ends (as the screen's handler is
    installed after tracer's imports), and it gets the interrupt; nothing raises."""
    from tracer.cli.signals import interrupt_outside_imports

    (tmp_path / "handler_installed_while_imported.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
        "for _ in range(50):\n    time.sleep(0.002)\nGOT = []\n"
        "signal.signal(signal.SIGINT, lambda signum, frame: GOT.append(signum))\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    previous = signal.getsignal(signal.SIGINT)
    try:
        interrupt_outside_imports()
        import handler_installed_while_imported as module

        deadline = time.monotonic() + 2
        while not module.GOT and time.monotonic() < deadline:
            time.sleep(0.005)
        assert module.GOT == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, previous)
        sys.modules.pop("handler_installed_while_imported", None)


def _python_start_up_seconds() -> float:
    """Wall time of a bare ``python -c pass`` of this venv, now (the machine's load included)."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    return time.perf_counter() - started


@pytest.mark.parametrize("delay", [0.0, 0.15, 0.35, 0.65, 3.0])
def test_ctrl_c_early_in_replay_exits_130_quietly(delay: float) -> None:
    """Ctrl-C while tracer is still starting (imports, the parser, the capture) and once the screen is up.

    Python's own start-up (site, the import system) comes before any of tracer runs: nothing of
    ours can catch an interrupt there. So each delay counts from twice the start-up time of a bare
    interpreter measured just before (about 0.1 s on an idle machine, several times that on a busy
    one). An interrupt inside a library's import (numpy turns it into an ImportError) is the case
    the early delays catch."""
    import pty
    import re
    import threading

    delay += 2 * _python_start_up_seconds()
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tracer", "replay", str(DEMO)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        start_new_session=True,
    )
    os.close(slave)
    seen = bytearray()

    def drain() -> None:
        try:
            while chunk := os.read(master, 65536):
                seen.extend(chunk)
        except OSError:
            pass

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        thread.join(2)
        os.close(master)
    text = re.sub(r"\x1b\[[0-9;?>$<=]*[a-zA-Z~]", "", seen.decode(errors="replace"))
    assert proc.returncode == 130, text[-2000:]
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
