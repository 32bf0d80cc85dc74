"""Many captures: a Parquet dataset of results, ingest and compare on Dask, trends across builds."""
