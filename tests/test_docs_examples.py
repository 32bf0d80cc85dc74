"""Every command block of README.md and docs/*.md runs as written, against the shipped files.

A fenced block with no language whose first line is a command (``tracer ...``, ``$ tracer ...``,
``.venv/bin/...``, ``./...``, ``pip ...``) is a command block. Each runs in a workspace of its
own document (a temporary folder holding copies of ``captures/`` and ``firmware_snippets/`` and
``.venv`` pointing at this interpreter's environment), with that environment's ``bin`` first on
PATH, as a user has it after the README's setup and ``. .venv/bin/activate``. The blocks of one
document run in order in one workspace (a later block may read what an earlier one wrote).

* A command exits 0 unless its comment says ``# exit N``.
* In a block with ``$`` prompts, every line shown after a command (but ``...``) must be a line of
  what it printed (stdout and stderr, spaces at the ends aside).
* A block marked with ``<!-- docs-test: parse: REASON -->`` on the line before it needs what a
  test machine has not (a probe, a terminal, the user's own build outputs, an install): each of
  its ``tracer`` commands must still be accepted by tracer's argument parser, and a script it
  runs must exist (``--help`` of a Python one exits 0).
* ``<!-- docs-test: synopsis -->`` marks a usage synopsis: every ``--option`` it names must be in
  the verb's ``--help``.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)
COMMAND = re.compile(r"^(\$ )?(tracer |\.venv/bin/|python3? |\./|pip |pyocd |\. )")
MARK = re.compile(r"^<!--\s*docs-test:\s*(parse|synopsis)\b:?\s*(.*?)\s*-->$")
EXIT = re.compile(r"#\s*exit (\d+)")
BIN = Path(sys.executable).parent

pytestmark = pytest.mark.qemu  # the demo blocks run the QEMU demo


@dataclasses.dataclass
class Command:
    """One command of a block, with what it must print and exit with."""

    text: str
    shown: list[str]
    exit_code: int


@dataclasses.dataclass
class Block:
    """One command block of a document."""

    document: Path
    line: int
    mode: str  # run, parse, synopsis
    reason: str
    commands: list[Command]

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def command_blocks(document: Path) -> list[Block]:
    """The command blocks of ``document``, in order."""
    text = document.read_text()
    out = []
    for match in FENCE.finditer(text):
        language, body = match.group(1).strip(), match.group(2)
        lines = body.rstrip("\n").splitlines()
        first = next((line for line in lines if line.strip()), "")
        if language or not COMMAND.match(first):
            continue
        before = text[: match.start()].rstrip("\n").splitlines()
        mark = MARK.match(before[-1].strip()) if before else None
        mode, reason = (mark.group(1), mark.group(2)) if mark else ("run", "")
        line = text[: match.start()].count("\n") + 1
        out.append(Block(document, line, mode, reason, _commands(lines)))
    return out


def _commands(lines: list[str]) -> list[Command]:
    prompted = any(line.startswith("$ ") for line in lines)
    commands: list[Command] = []
    pending = ""
    for line in lines:
        if prompted and not line.startswith("$ ") and not pending:
            if commands and line.strip() and line.strip() != "...":
                commands[-1].shown.append(line.strip())
            continue
        part = line[2:] if prompted and line.startswith("$ ") else line
        if not part.strip() and not pending:
            continue
        pending += part.rstrip("\\").rstrip() + " " if part.rstrip().endswith("\\") else part
        if part.rstrip().endswith("\\"):
            continue
        found = EXIT.search(pending)
        commands.append(Command(pending.strip(), [], int(found.group(1)) if found else 0))
        pending = ""
    return commands


BLOCKS = [block for document in DOCUMENTS for block in command_blocks(document)]


def test_the_blocks_are_found() -> None:
    """The extraction sees the README's blocks and the docs' (a broken pattern finds none)."""
    where = {b.document.name for b in BLOCKS}
    assert {"README.md", "check.md", "diagnose.md", "tui.md"} <= where
    assert sum(b.mode == "run" for b in BLOCKS) >= 8


@pytest.fixture(scope="module")
def workspaces() -> dict[Path, Path]:
    """One workspace per document (see the module docstring), made when first needed."""
    return {}


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The user's cache folder of the runs (``tracer demo`` builds its firmware there): the
    module's own, so the test builds once and leaves the real one alone."""
    return tmp_path_factory.mktemp("cache")


def _workspace(workspaces: dict[Path, Path], document: Path, factory: pytest.TempPathFactory) -> Path:
    if document not in workspaces:
        ws = factory.mktemp(document.stem)
        shutil.copytree(ROOT / "captures", ws / "captures")
        shutil.copytree(ROOT / "firmware_snippets", ws / "firmware_snippets", ignore=shutil.ignore_patterns("build"))
        (ws / ".venv").symlink_to(Path(sys.prefix))
        workspaces[document] = ws
    return workspaces[document]


def _env(cache: Path | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("COLUMNS", None)
    if cache is not None:
        env["XDG_CACHE_HOME"] = str(cache)
    return env


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mode == "run"], ids=lambda b: b.where)
def test_block_runs_as_written(block: Block, workspaces, cache: Path, tmp_path_factory) -> None:
    ws = _workspace(workspaces, block.document, tmp_path_factory)
    for command in block.commands:
        done = subprocess.run(
            ["bash", "-c", command.text], cwd=ws, env=_env(cache), capture_output=True, text=True, timeout=900
        )
        said = done.stdout + done.stderr
        assert done.returncode == command.exit_code, f"{block.where}: {command.text}\n{said[-3000:]}"
        assert "Traceback" not in said, f"{block.where}: {command.text}\n{said[-3000:]}"
        lines = {line.strip() for line in said.splitlines()}
        missing = [line for line in command.shown if line not in lines]
        assert not missing, f"{block.where}: {command.text} did not print {missing}\n{said[-3000:]}"


def _tracer_parts(command: str) -> list[list[str]]:
    """The ``tracer`` invocations of a command line (``&&``, ``|`` and ``&`` split it)."""
    text = command.split(" #", 1)[0]
    out = []
    for part in re.split(r"&&|\||(?<![=?])&(?!\w)", text):
        words = shlex.split(part)
        if words and Path(words[0]).name == "tracer":
            out.append(words[1:])
    return out


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mode == "parse"], ids=lambda b: b.where)
def test_block_that_cannot_run_here_parses(block: Block) -> None:
    from tracer.cli.main import build_parser

    assert block.reason, f"{block.where}: say why the block cannot run (<!-- docs-test: parse: WHY -->)"
    for command in block.commands:
        for args in _tracer_parts(command.text):
            try:
                build_parser().parse_args(args)
            except SystemExit as exc:
                pytest.fail(f"{block.where}: tracer {' '.join(args)}: refused by the parser ({exc.code})")
        words = shlex.split(command.text.split(" #", 1)[0])
        if words and words[0].startswith(("./", ".venv/bin/python")):
            script = ROOT / (words[1] if words[0].endswith("python") else words[0])
            assert script.is_file(), f"{block.where}: {script} is not there"
            if script.suffix == ".py":
                done = subprocess.run(
                    [sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
                )
                assert done.returncode == 0, f"{block.where}: {script.name} --help\n{done.stderr[-2000:]}"


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mode == "synopsis"], ids=lambda b: b.where)
def test_synopsis_names_real_options(block: Block) -> None:
    text = " ".join(c.text for c in block.commands)
    verb = text.split()[1]
    done = subprocess.run([str(BIN / "tracer"), verb, "--help"], env=_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for option in set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", text)):
        assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", done.stdout), f"{block.where}: {option}"
