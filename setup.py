"""What pyproject.toml cannot say (or says only experimentally): the compiled kernels, and the
firmware sources inside the package.

* ``tracer._kernels``: TPIU deframing, ITM/DWT decoding, telemetry records and packet listings in
  plain C on the stable ABI (one wheel per platform serves every Python from 3.11 on), arrays
  through the buffer protocol, so building needs a C compiler and Python's headers, nothing else.
  Optional: where no compiler is found, tracer installs anyway and runs the same kernels in pure
  Python (slower; it says so once on stderr). ``docs/decoder.md`` describes both.
* ``firmware_snippets/`` (the trc library, the QEMU demo, their Makefile) is the only copy in the
  repository; a wheel carries it as ``tracer/firmware`` so that ``tracer demo`` builds the demo from
  an installed package. An editable install reads ``firmware_snippets/`` in the checkout directly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
FIRMWARE = ROOT / "firmware_snippets"
LEFT_OUT = shutil.ignore_patterns("build", "*.o", "*.elf", "*.map", "__pycache__")
KERNELS = Extension(
    "tracer._kernels",
    sources=[f"tracer/_native/{name}.c" for name in ("module", "tpiu", "itm", "telemetry", "format")],
    depends=["tracer/_native/common.h"],
    py_limited_api=True,  # common.h sets Py_LIMITED_API to 3.11
    optional=True,
)


class BuildWithFirmware(build_py):
    """``build_py``, then a copy of ``firmware_snippets`` (less build output) as ``tracer/firmware``."""

    def run(self) -> None:
        super().run()
        if not self.editable_mode:
            shutil.copytree(FIRMWARE, Path(self.build_lib) / "tracer" / "firmware", ignore=LEFT_OUT, dirs_exist_ok=True)


setup(
    ext_modules=[KERNELS],
    cmdclass={"build_py": BuildWithFirmware},
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
