"""The dataset's tables and their columns, versioned (``docs/fleet.md`` describes each column).

A dataset is a folder of plain Parquet files, one sub-folder per table, Hive-partitioned by the
day the capture was recorded (``captures/date=2025-06-01/...parquet``), readable by DuckDB,
pyarrow, Polars or Spark without tracer. ``_tracer_dataset.json`` at its root names the schema
version; tracer refuses to write to (or read) a dataset of a newer version than its own, and
reads older ones it knows.

Version history:

* 1: captures, labels, layers, stacks, findings, errors (one file per ingest run and day);
  inferences, layer_executions, pmu (one file per capture). Added since, without a new version
  (a table older datasets lack reads as empty; older tracers ignore it): predictions (one file per
  ingest run and day; rows only for captures ingested with ``--budget``). Columns added since, at
  the end of their table and nullable (files written before read them as null, and older tracers skip
  them): energy from a power recording (``ingest --power``): ``captures.energy_uj``,
  ``energy_interval_uj``, ``power_path``; ``layers.energy_uj``, ``energy_interval_uj``.
"""

from __future__ import annotations

import pyarrow as pa

SCHEMA_VERSION = 1
FORMAT = "tracer-dataset"
MANIFEST = "_tracer_dataset.json"
PARTITION = "date"  # the Hive partition key of every table: YYYY-MM-DD

ID = pa.dictionary(pa.int32(), pa.string())  # capture_id in the per-execution tables: 4 bytes a row

CAPTURES = pa.schema(
    [
        ("capture_id", pa.string()),  # SHA-256 of the file's bytes, hex: the same file is ingested once
        ("path", pa.string()),  # as given to ingest
        ("bytes", pa.int64()),  # file size
        ("kind", pa.string()),  # capture, raw-itm, text-log, capture-text, etdump
        ("source", pa.string()),  # the URL it was recorded from
        ("created", pa.string()),  # when recording started (ISO 8601), if the header says
        ("clock_hz", pa.int64()),
        ("clock_source", pa.string()),
        ("model", pa.string()),  # a hash of the layer list (index, name, op): captures of one model share it
        ("layer_count", pa.int32()),
        ("inferences", pa.int64()),
        ("complete", pa.int64()),
        ("latency_p50", pa.int64()),  # cycles, complete inferences
        ("latency_p99", pa.int64()),
        ("arena_used", pa.int64()),  # bytes, highest reported
        ("arena_size", pa.int64()),
        ("overflows", pa.int64()),
        ("gaps", pa.int64()),
        ("lost_records", pa.int64()),
        ("damaged_records", pa.int64()),
        ("warnings", pa.int32()),
        ("run_id", pa.string()),  # the ingest run that added it
        ("ingested_at", pa.string()),
        ("energy_uj", pa.float64()),  # mean per inference, microjoules (null: no power recording)
        ("energy_interval_uj", pa.float64()),  # half-width of its 95 % interval
        ("power_path", pa.string()),  # the power recording attributed (ingest --power)
    ]
)

LABELS = pa.schema(
    [
        ("capture_id", pa.string()),
        ("key", pa.string()),  # board, elf_build_id, git_revision, cpu_hz ... and --label keys
        ("value", pa.string()),
    ]
)

LAYERS = pa.schema(
    [
        ("capture_id", pa.string()),
        ("layer", pa.int32()),
        ("name", pa.string()),
        ("op", pa.string()),
        ("engine", pa.string()),  # npu or cpu
        ("count", pa.int64()),  # complete executions
        ("excluded", pa.int64()),  # executions of incomplete inferences, left out
        ("min", pa.int64()),
        ("p50", pa.int64()),  # nearest rank
        ("p99", pa.int64()),
        ("max", pa.int64()),
        ("mean", pa.float64()),
        ("std", pa.float64()),
        ("energy_uj", pa.float64()),  # per execution, microjoules (null: no power recording)
        ("energy_interval_uj", pa.float64()),  # half-width of its 95 % interval
    ]
)

STACKS = pa.schema(
    [
        ("capture_id", pa.string()),
        ("name", pa.string()),
        ("high_water", pa.int64()),  # bytes
        ("size", pa.int64()),
        ("canary_ok", pa.bool_()),
    ]
)

FINDINGS = pa.schema(
    [
        ("capture_id", pa.string()),
        ("id", pa.string()),  # the finding's kind: layer-over-budget, isr-in-layer ...
        ("severity", pa.string()),  # info, warning, error
        ("layer", pa.int32()),  # null: the whole capture
        ("message", pa.string()),
    ]
)

ERRORS = pa.schema(
    [
        ("run_id", pa.string()),
        ("path", pa.string()),
        ("capture_id", pa.string()),  # null when the file could not even be read
        ("exit_code", pa.int32()),  # what 'tracer report' would exit with: 3 unreadable
        ("error", pa.string()),  # the message
        ("at", pa.string()),  # when (ISO 8601)
    ]
)

INFERENCES = pa.schema(
    [
        ("capture_id", ID),
        ("inference", pa.int64()),  # the firmware's number
        ("start", pa.int64()),  # cycles, null when missing
        ("end", pa.int64()),
        ("latency", pa.int64()),
        ("complete", pa.bool_()),
        ("problems", pa.string()),  # why incomplete, "; "-separated; null when complete
        ("input_crc", pa.int64()),
        ("output_crc", pa.int64()),
    ]
)

LAYER_EXECUTIONS = pa.schema(
    [
        ("capture_id", ID),
        ("inference", pa.int64()),
        ("layer", pa.int32()),
        ("start", pa.int64()),  # cycles
        ("cycles", pa.int64()),  # interrupts included
        ("isr_cycles", pa.int64()),  # interrupt time inside
        ("complete", pa.bool_()),
    ]
)

PMU = pa.schema(
    [
        ("capture_id", ID),
        ("inference", pa.int64()),
        ("layer", pa.int32()),  # null: a total over the inference (what a log printed)
        ("counter", pa.dictionary(pa.int32(), pa.string())),  # NPU_ACTIVE, AXI0_RD_DATA_BEAT_RECEIVED ...
        ("value", pa.int64()),
    ]
)

# The planner's estimate of each measured layer a calibration can learn from ('ingest --budget';
# tracer.analysis.calibration_data decides which layers count): what 'calibrate --dataset' reads.
PREDICTIONS = pa.schema(
    [
        ("capture_id", pa.string()),
        ("layer", pa.int32()),  # the measured layer (an ethos-u operator: one row per model operator in it)
        ("model", pa.string()),  # the budget's model name (a model of the calibration)
        ("budget_layer", pa.string()),  # the planner's name of the layer
        ("op", pa.string()),  # operator type, TFLite name (CONV_2D)
        ("measured_cycles", pa.float64()),  # median, capture clock
        ("predicted_cycles", pa.float64()),  # the planner's estimate, capture clock
        ("planner_cycles", pa.float64()),  # the same in the planner's clock
        ("mac_count", pa.float64()),  # the planner's per-layer numbers, null when it wrote none
        ("npu_cycles", pa.float64()),
        ("sram_access_cycles", pa.float64()),
        ("dram_access_cycles", pa.float64()),
        ("on_chip_flash_access_cycles", pa.float64()),
        ("off_chip_flash_access_cycles", pa.float64()),
        ("planner", pa.string()),  # JSON: {name, version, config} of the planner that made the budget
    ]
)

# Tables written once per ingest run and day, and tables written once per capture.
RUN_TABLES = {
    "captures": CAPTURES,
    "labels": LABELS,
    "layers": LAYERS,
    "stacks": STACKS,
    "findings": FINDINGS,
    "errors": ERRORS,
    "predictions": PREDICTIONS,
}
CAPTURE_TABLES = {"inferences": INFERENCES, "layer_executions": LAYER_EXECUTIONS, "pmu": PMU}
TABLES = {**RUN_TABLES, **CAPTURE_TABLES}
