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


def _module_imports() -> dict[str, set[str]]:
    """Every tracer module and the tracer modules it imports anywhere: at the top, inside functions
    and behind ``TYPE_CHECKING`` alike."""
    import ast

    files = {}
    for path in (ROOT / "tracer").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        files[".".join(parts)] = path

    def module_of(name: str) -> str | None:
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*up, base] if base else up)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in files else base for alias in node.names]
            for target in targets:
                found = module_of(target) if target.startswith("tracer") else None
                if found is not None and found != name:
                    graph[name].add(found)
    return graph


def test_no_import_cycle_hides_behind_a_late_or_type_only_import() -> None:
    """Shared types live in leaf modules: no two modules import each other, directly or around a
    loop, counting the imports inside functions and behind ``TYPE_CHECKING`` that Python and
    import-linter's layers let through."""
    graph = _module_imports()
    seen: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        seen[node] = low[node] = len(seen)
        stack.append(node)
        for other in sorted(graph[node]):
            if other not in seen:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], seen[other])
        if low[node] == seen[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in seen:
            visit(node)
    assert "tracer.analysis.accumulate" in graph["tracer.analysis.analyze"]  # (the graph is read at all)
    assert cycles == []
