"""``make -C firmware_snippets`` with the real cross compiler: the library for three cores with
-Wall -Wextra -Werror, linkable without any libc, and the QEMU demo images."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "firmware_snippets" / "include"
ARCH = {"cortex-m4": "v7E-M", "cortex-m33": "v8-M.mainline", "cortex-m55": "v8.1-M.mainline"}
API = [
    "trc_use_itm",
    "trc_use_writer",
    "trc_set_time",
    "trc_time_dwt_init",
    "trc_time_systick_init",
    "trc_target_info",
    "trc_inference_begin",
    "trc_inference_end",
    "trc_layer_begin",
    "trc_layer_end",
    "trc_layer_info",
    "trc_pmu_config",
    "trc_pmu_snapshot",
    "trc_npu_job_begin",
    "trc_npu_job_end",
    "trc_arena",
    "trc_stack_paint",
    "trc_stack_report",
    "trc_cache_op",
    "trc_buffer_crc",
    "trc_mark",
    "trc_value",
    "trc_print",
    "trc_sync",
    "trc_measure_marker_cost",
    "trc_ethosu_pmu_read",
    "trc_set_drain",
    "trc_flush",
    "trc_pending",
    "trc_use_consumer",
    "trc_tx_span",
    "trc_tx_done",
    "trc_layer_work",
    "trc_cpu_pmu_init",
    "trc_cpu_dwt_counters_init",
    "trc_cpu_counters_off",
    "trc_task_switched_in",
    "trc_task_info",
    "trc_task_deleted",
    "trc_text_dropped",
]

pytestmark = pytest.mark.qemu  # needs gcc-arm-none-eabi (CI installs it with QEMU)


def _out(command: list[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


@pytest.mark.parametrize("cpu", sorted(ARCH))
def test_library_for_each_core(firmware_build: Path, cpu: str) -> None:
    """libtrc.a for the core's architecture, with the whole API; the Ethos-U hooks object too."""
    lib = firmware_build / cpu / "libtrc.a"
    symbols = _out(["arm-none-eabi-nm", "--defined-only", str(lib)])
    for name in API:
        assert f" T {name}\n" in symbols, name
    attributes = _out(["arm-none-eabi-readelf", "-A", str(firmware_build / cpu / "trc_core.o")])
    assert f"Tag_CPU_arch: {ARCH[cpu]}" in attributes
    hooks = _out(["arm-none-eabi-nm", "--defined-only", str(firmware_build / cpu / "trc_ethosu_hooks_cache.o")])
    for name in ("ethosu_inference_begin", "ethosu_inference_end", "ethosu_flush_dcache", "ethosu_invalidate_dcache"):
        assert f" T {name}\n" in hooks, name


def test_library_needs_no_libc(firmware_build: Path, tmp_path: Path) -> None:
    """Linked with -nostdlib (only libgcc), every API function resolves: no memcpy, no printf."""
    main = tmp_path / "main.c"
    calls = "".join(f"    (void)&{name};\n" for name in API)
    main.write_text(f'#include "trc.h"\nvoid _start(void);\nvoid _start(void)\n{{\n{calls}    for (;;) {{ }}\n}}\n')
    elf = tmp_path / "app.elf"
    _out(
        [
            "arm-none-eabi-gcc",
            "-mcpu=cortex-m33",
            "-mthumb",
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{INCLUDE}",
            "-nostdlib",
            "-nostartfiles",
            "-e",
            "_start",
            "-Wl,--no-gc-sections",
            str(main),
            str(firmware_build / "cortex-m33" / "libtrc.a"),
            "-lgcc",
            "-o",
            str(elf),
        ]
    )
    undefined = _out(["arm-none-eabi-nm", "--undefined-only", str(elf)])
    assert undefined.strip() == ""


def test_warnings_are_errors(firmware_build: Path, tmp_path: Path) -> None:
    """The library's flags really stop the build on a warning (an unused variable here)."""
    bad = tmp_path / "bad.c"
    bad.write_text('#include "trc.h"\nint trc_bad(void);\nint trc_bad(void) { int unused; return 0; }\n')
    done = subprocess.run(
        [
            "make",
            "-s",
            "-C",
            str(ROOT / "firmware_snippets"),
            "-f",
            "Makefile",
            "--eval",
            f"probe: ; $(CC) $(call ARM_FLAGS,cortex-m55) $(LIB_CFLAGS) -c {bad} -o {tmp_path / 'bad.o'}",
            "probe",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0 and "unused" in done.stderr


def test_demo_images_fit_the_board(firmware_build: Path) -> None:
    """The demo, cost and masked-time ELFs for mps3-an547: code in the 512 KiB ITCM, data in the DTCM."""
    for name in ("tracer_demo.elf", "marker_cost.elf", "tracer_demo_masked.elf"):
        sizes = _out(["arm-none-eabi-size", "-A", str(firmware_build / "demo" / name)])
        rows = {
            line.split()[0]: (int(line.split()[1]), int(line.split()[2], 0))
            for line in sizes.splitlines()
            if line.startswith(".")
        }
        size, address = rows[".text"]
        assert address == 0x10000000 and size < 512 * 1024
        assert rows[".bss"][1] >= 0x30000000
