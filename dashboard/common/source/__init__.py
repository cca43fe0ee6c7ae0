"""The data every page reads: the cached loading (``compute``), the column and unit detection,
the operator's data directory, the demo's disk cache and the size limits."""
