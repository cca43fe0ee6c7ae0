"""The drawing toolkit every page shares: figures, maps, colours, in-place charts, tables with
their downloads."""
