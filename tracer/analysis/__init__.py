"""Analysis: per-layer statistics, measured against predicted, findings, the report."""
