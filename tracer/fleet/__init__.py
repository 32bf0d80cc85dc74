"""Many captures: a Parquet dataset of results, ingest and compare on Dask, trends across builds.

Everything here needs the ``fleet`` extra (``pip install 'tracer[fleet]'``: Dask's distributed
scheduler, pyarrow, ruptures); the core install compares two captures without it.
:func:`require_extra` says in words what is missing, before anything is read or written.
"""

from __future__ import annotations

import importlib.util

from tracer.errors import UsageError

INSTALL_HINT = "pip install 'tracer[fleet]'"


def require_extra(why: str, modules: tuple[str, ...]) -> None:
    """Raise a usage error (exit 2) naming the modules of the fleet extra ``why`` needs and lacks."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"{why} needs {', '.join(missing)}, not installed ({INSTALL_HINT})")
