"""A Dask task given up because the workers that ran it died: exit 4 in tracer's words.

A real ``LocalCluster`` (no fake): the task kills its own worker process. With the scheduler's
``allowed-failures`` at 0, Dask gives the task up at the first death (``KilledWorker``); with its
default, the nanny's new worker runs it again and dies again, until Dask gives up.
"""

from __future__ import annotations

import os

import pytest

from tracer.errors import SourceUnavailable


def _die(path: str) -> None:
    os._exit(9)  # what the OOM killer does to a worker


@pytest.mark.xdist_group("dask")
def test_a_task_whose_workers_die_fails_in_tracers_words() -> None:
    """Every worker that ran the task died: SourceUnavailable (exit 4) naming the capture, in words,
    not Dask's ``KilledWorker`` text."""
    import dask
    import distributed

    from tracer.fleet.cluster import DaskRunner

    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 0}),
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        runner = DaskRunner(client, "a local Dask cluster of 1 worker process")
        with pytest.raises(SourceUnavailable) as caught:
            list(runner.run(_die, [("board-7.trace",)]))
    message = str(caught.value)
    assert (
        "every Dask worker of a local Dask cluster of 1 worker process that ran the task reading board-7.trace died"
        in message
    )
    assert "nothing is committed" in message and "KilledWorker" not in message
    assert caught.value.exit_code == 4
