"""The layering of PRODUCT.md holds: the core never imports the TUI, the CLI or a probe library.

Each core module is imported in a fresh interpreter and ``sys.modules`` is inspected afterwards,
so an import hidden anywhere in the chain is caught (the approach harlequin's import-hygiene test
takes).
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import tracer

CORE_PACKAGES = ("capture", "decode", "telemetry", "budget", "analysis", "export", "session", "elf", "compare")
# The fleet extra's libraries stay out of the core too: `tracer compare BASE NEW` works without them.
# (Not SciPy: numba imports it whenever it is installed.)
FLEET = ("pyarrow", "dask", "distributed", "ruptures", "tracer.fleet")
FORBIDDEN = ("textual", "rich", "serial", "pylink", "pyocd", "tracer.tui", "tracer.cli", *FLEET)
PACKAGE_DIR = Path(tracer.__file__).parent


def core_modules() -> list[str]:
    """Every module of the core packages."""
    names = []
    for package in CORE_PACKAGES:
        path = PACKAGE_DIR / package
        if not path.is_dir():
            continue
        names.append(f"tracer.{package}")
        for info in pkgutil.walk_packages([str(path)], prefix=f"tracer.{package}."):
            names.append(info.name)
    return sorted(names)


def test_core_modules_exist() -> None:
    """The walk finds the core (guards against the test silently checking nothing)."""
    modules = core_modules()
    assert "tracer.decode.itm" in modules
    assert "tracer.capture.writer" in modules
    assert len(modules) > 10


@pytest.mark.parametrize("module", core_modules())
def test_core_module_imports_no_front_end_or_probe_library(module: str) -> None:
    """Importing a core module pulls in no TUI, CLI, serial or probe library."""
    code = (
        "import importlib, json, sys\n"
        f"importlib.import_module({module!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    bad = sorted(m for m in loaded if any(m == f or m.startswith(f + ".") for f in FORBIDDEN))
    assert not bad, f"{module} imports {bad}"


def test_sources_import_probe_libraries_lazily() -> None:
    """``tracer.sources`` and the CLI parser load without pulling pyserial or probe libraries."""
    code = (
        "import json, sys\n"
        "import tracer.sources, tracer.cli.main\n"
        "tracer.cli.main.build_parser()\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(json.loads(done.stdout))
    for lib in ("serial", "pylink", "pyocd", "textual"):
        assert lib not in loaded, f"{lib} imported eagerly"
