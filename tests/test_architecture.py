"""The layering of docs/architecture.md holds.

The layers and the libraries the core may not import are contracts in ``pyproject.toml``
(``[tool.importlinter]``), checked by import-linter over every import statement, those inside
functions included; ``.ci/run`` runs ``lint-imports`` too. Import-linter reads the code; one test
here also imports the CLI parser and the sources in a fresh interpreter, because "loaded lazily" is
a fact about what runs, not about what the code says.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parent.parent


def test_the_import_contracts_hold(capsys: pytest.CaptureFixture[str]) -> None:
    """Every contract of ``[tool.importlinter]`` is kept (the output names any import that breaks one)."""
    code = lint_imports(str(ROOT / "pyproject.toml"), no_cache=True, no_logo=True)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "BROKEN" not in out and out.count("KEPT") >= 2, out


def test_the_contracts_name_every_package() -> None:
    """A package or module nobody put in a layer would be outside every contract: each one is named."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    layered = {name.strip() for layer in config["contracts"][0]["layers"] for name in layer.split("|")}
    packages = {f"tracer.{p.name}" for p in (ROOT / "tracer").iterdir() if (p / "__init__.py").is_file()}
    packages |= {f"tracer.{p.stem}" for p in (ROOT / "tracer").glob("*.py") if not p.stem.startswith("_")}
    assert packages <= layered, sorted(packages - layered)


def test_sources_import_probe_libraries_lazily() -> None:
    """``tracer.sources`` and the CLI parser load without pulling pyserial, probe libraries or Textual."""
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
