"""The Data page: what was read, what was rejected and why, and the HATs it produced."""
