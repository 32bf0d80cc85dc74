#!/usr/bin/env python3
"""A stand-in for an Arm FVP, for tracer's launcher tests (no FVP can be installed in CI).

It behaves like ``FVP_Corstone_SSE-300_Ethos-U55`` as far as tracer sees it:

* without ``-C mps3_board.uart0.out_file=-`` it listens on four local TCP ports, prints the FVP's
  banner (``telnetterminal0: Listening for serial connection on port N`` ...), accepts one
  connection on terminal 0, sends the bytes of the ``-a`` file as UART output, and exits;
* with ``-C mps3_board.uart0.out_file=-`` it writes those bytes to standard output instead;
* with ``-C ethosu.extra_args=--pmu-trace FILE`` it copies ``-C fake.pmu_trace_template=PATH`` to
  FILE when the run ends, as the FVP writes its PMU trace at exit.

Fake-only options: ``-C fake.exit_code=N`` (exit status), ``-C fake.fail=1`` (exit before the
banner, as an FVP with a bad parameter does), ``-C fake.chunk=N`` (UART write size).
"""

from __future__ import annotations

import shutil
import socket
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    app = None
    params: dict[str, str] = {}
    i = 0
    while i < len(argv):
        if argv[i] == "-a":
            app = argv[i + 1]
            i += 2
        elif argv[i] == "-C":
            key, _, value = argv[i + 1].partition("=")
            params[key] = value.strip("'\"")
            i += 2
        else:
            i += 1
    if params.get("fake.fail") == "1":
        print("Error: unknown parameter 'cpu0.bogus'", file=sys.stderr)
        return 1
    payload = Path(app).read_bytes() if app else b""
    chunk = int(params.get("fake.chunk", "997"))
    if params.get("mps3_board.uart0.out_file") == "-":
        out = sys.stdout.buffer
        for at in range(0, len(payload), chunk):
            out.write(payload[at : at + chunk])
            out.flush()
    else:
        servers = []
        for _ in range(4):
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            servers.append(srv)
        for name, srv in zip((0, 1, 2, 5), servers):
            print(f"telnetterminal{name}: Listening for serial connection on port {srv.getsockname()[1]}", flush=True)
        servers[0].settimeout(20)
        conn, _ = servers[0].accept()
        for at in range(0, len(payload), chunk):
            conn.sendall(payload[at : at + chunk])
            time.sleep(0.001)
        print("Info: Simulation is stopping. Reason: CPU time has been exceeded.", flush=True)
        conn.close()
        for srv in servers:
            srv.close()
    extra = params.get("ethosu.extra_args", "")
    if "--pmu-trace" in extra and "fake.pmu_trace_template" in params:
        shutil.copyfile(params["fake.pmu_trace_template"], extra.split("--pmu-trace", 1)[1].strip())
    return int(params.get("fake.exit_code", "0"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
