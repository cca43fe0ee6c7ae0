"""Many HATs at once (SPEC section 5): per-grid release, accounting, CHOP-USER, and every HAT of a
slot, a day or a file in one vectorised pass."""
