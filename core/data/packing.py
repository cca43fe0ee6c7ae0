"""The packed-key aggregation of :mod:`core.data.aggregation`: (cell, slot, user) packed into one
uint64 per row (:func:`_packed`), sorted with the row numbers in its low bits
(:func:`_sort_keys`), summed over runs of equal keys (:func:`_sums_by_sort`) and decoded back
into columns (:func:`_unpacked`); :class:`SortedRuns` keeps the sorted records and sums them
a slice of runs at a time.

At 10⁷ rows each array is 80 MB of pages the kernel zeroes on first touch, and that, more than
the arithmetic, is what these steps cost: they work in place, in as few arrays as they can.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import polars as pl

__all__ = ["SortedRuns", "sorted_u64"]


def sorted_u64(values: np.ndarray) -> np.ndarray:
    """``values`` (uint64) sorted, in a new read-only array: polars' sort, which uses every
    core, where numpy's uses one (10⁷ random keys on the 2-core machine: 0.25 s wall and
    0.43 CPU s against numpy's 0.78 s of both; ``bench/bench_prepare.py``).

    >>> sorted_u64(np.array([5, 3, 2**64 - 1, 3], dtype=np.uint64)).tolist()
    [3, 3, 5, 18446744073709551615]
    """
    return pl.Series(values, dtype=pl.UInt64).sort().to_numpy()


def _fixed_numpy(values: np.ndarray, shift: int, out: np.ndarray | None = None) -> np.ndarray:
    """:func:`core.data.aggregation.fixed_value` in numpy, bit for bit (the same product by a power of two, polars'
    ``round`` is numpy's ``rint``: halves to even; an exact cast to int64), in a new array or,
    with ``out=values``, in the values' own memory (their int64 view, returned).

    >>> v = np.array([0.1, 2.5 * 2.0**-3, 65.0, 1e-20])
    >>> fixed = pl.select((pl.lit(pl.Series(v)) * 2.0**3).round().cast(pl.Int64)).to_series()
    >>> bool((_fixed_numpy(v, 3) == fixed.to_numpy()).all()), _fixed_numpy(v, 3, out=v).tolist()
    (True, [1, 2, 520, 0])
    """
    scaled = np.multiply(values, 2.0**shift, out=out)
    fixed = scaled.view(np.int64)
    np.rint(scaled, out=fixed, casting="unsafe")  # element by element: exact overlap is safe
    return fixed


def _sums_by_sort(
    frame: pl.DataFrame, *, text_ids: bool, shifts: tuple[int, int] | None = None
) -> pl.DataFrame | None:
    """Rows summed per (cell, slot, user) and sorted, by one sort on the packed key
    (:func:`_sort_keys`) and a sum over each run of equal keys: records (``shifts``: m the run
    lengths, s and q the sums of ``fixed_value`` at those shifts) or partial sums (columns
    m, s, q: the parts' keys are mostly distinct, and the file's order needs the sort anyway).
    None when the keys, with the row numbers, do not fit 64 bits.

    Fresh memory is what costs here (each array of 10⁷ rows is 80 MB of pages the kernel
    zeroes), so two arrays do the work: the key, and a scratch array that holds the slot
    offsets, then the row numbers, then the order; once the runs are found they hold the
    values in key order and their fixed-point sums."""
    found = _sorted(frame)
    if found is None:
        return None
    k, order, starts, decode, bits = found
    n = k.size
    runs = starts.size < n
    keys_sorted = k[starts] if runs else k
    if shifts is None:
        sums = {c: frame.get_column(c).to_numpy()[order] for c in ("m", "s", "q")}
    else:  # fixed_value's arithmetic, on the values in key order, in the two arrays
        value = k.view(np.float64) if runs else np.empty(n, dtype=np.float64)
        np.take(frame.get_column("value").to_numpy(), order, out=value, mode="clip")
        sums = {"s": _fixed_numpy(value, shifts[0], out=order.view(np.float64))}
        np.multiply(value, value, out=value)
        sums["q"] = _fixed_numpy(value, shifts[1], out=value)
    k = keys_sorted
    if runs:  # runs of equal keys: add them up (exact integers)
        sums = {c: np.add.reduceat(v, starts) for c, v in sums.items()}
    if shifts is not None:  # a record's count is its run's length
        m = np.empty(starts.size, dtype=np.int64)
        np.subtract(starts[1:], starts[:-1], out=m[:-1])
        m[-1] = n - starts[-1]
        sums = {"m": m} | sums
    keys = _unpacked(k, decode, bits, text_ids, in_place=True)  # k: nothing reads it again
    return keys.with_columns(pl.Series(c, v, dtype=pl.Int64) for c, v in sums.items())


class SortedRuns:
    """Records sorted by their packed key, summed run by run when asked: the summaries of
    :func:`_sums_by_sort` (records, at ``shifts``) made ``WRITE_ROWS`` rows at a time, so a
    writer can compress one row group while the next is being summed
    (:func:`core.data.stream.write_aggregate`). Row for row the same integers as
    :func:`_sums_by_sort`'s frame: the same arithmetic on the same values, summed over the
    same runs.

    >>> f = pl.DataFrame({"cell": [9, 7, 9, 7], "slot": [1, 1, 1, 1], "user": ["a", "b", "a", "a"],
    ...     "value": [1.0, 2.0, 3.0, 4.0]}, schema_overrides={"cell": pl.UInt64})
    >>> runs = SortedRuns.of(f, (4, 8), text_ids=True)
    >>> runs.height, runs.counts(), runs.rows(1, 3).rows()
    (3, {'users': 2, 'hats': 2, 'cells': 2, 'slots': 1}, [(7, 1, 'b', 1, 32, 1024), (9, 1, 'a', 2, 64, 2560)])
    >>> runs.rows(0, 3).equals(_sums_by_sort(f, text_ids=True, shifts=(4, 8)))
    True
    """

    def __init__(
        self,
        keys: np.ndarray,
        starts: np.ndarray,
        order: np.ndarray,
        value: np.ndarray,
        packing: tuple[tuple[int, int, int, pl.Series], tuple[int, int]],
        shifts: tuple[int, int],
        text_ids: bool,
    ) -> None:
        self.keys, self.starts, self.order, self.value = keys, starts, order, value
        self.decode, self.bits = packing
        self.shifts, self.text_ids = shifts, text_ids
        self.height = int(starts.size)

    @classmethod
    def of(
        cls, frame: pl.DataFrame, shifts: tuple[int, int], *, text_ids: bool
    ) -> SortedRuns | None:
        """The records of ``frame`` (cell, slot, user, value; no null value) sorted by key;
        None when the keys, with the row numbers, do not fit 64 bits (then
        :func:`_sums_by_sort` cannot either)."""
        found = _sorted(frame)
        if found is None:
            return None
        k, order, starts, decode, bits = found
        keys = k[starts] if starts.size < k.size else k
        value = frame.get_column("value").to_numpy()
        return cls(keys, starts, order, value, (decode, bits), shifts, text_ids)

    def most_records(self) -> int:
        """The largest m (records of one user in one HAT)."""
        ends = np.append(self.starts[1:], self.order.size)
        return int((ends - self.starts).max()) if self.height else 0

    def counts(self) -> dict[str, int]:
        """:func:`core.data.aggregation.sorted_counts` of the summaries, from the keys."""
        if not self.height:
            return {"users": 0, "hats": 0, "cells": 0, "slots": 0}
        slot_bits, user_bits = self.bits
        # one array holds each field in turn (fresh pages cost more here than the arithmetic)
        held = np.empty(self.height, dtype=np.int64)
        field = held.view(np.uint64)
        np.bitwise_and(self.keys, np.uint64((1 << user_bits) - 1), out=field)
        users = int(np.count_nonzero(np.bincount(held)))
        np.right_shift(self.keys, np.uint64(user_bits), out=field)  # the HAT
        hats = 1 + int(np.count_nonzero(field[1:] != field[:-1]))
        np.bitwise_and(field, np.uint64((1 << slot_bits) - 1), out=field)
        slots = int(np.count_nonzero(np.bincount(held)))
        np.right_shift(self.keys, np.uint64(slot_bits + user_bits), out=field)  # the cell
        cells = 1 + int(np.count_nonzero(field[1:] != field[:-1]))
        return {"users": users, "hats": hats, "cells": cells, "slots": slots}

    def rows(self, lo: int, hi: int) -> pl.DataFrame:
        """Summary rows ``lo..hi-1``: cell, slot, user, m, s, q (fixed-point integers)."""
        hi = min(hi, self.height)
        a = int(self.starts[lo])
        b = int(self.starts[hi]) if hi < self.height else self.order.size
        local = self.starts[lo:hi] - a
        value = self.value[self.order[a:b]]
        s = _fixed_numpy(value, self.shifts[0])
        np.multiply(value, value, out=value)
        q = _fixed_numpy(value, self.shifts[1], out=value)
        if local.size < b - a:
            s, q = np.add.reduceat(s, local), np.add.reduceat(q, local)
        m = np.diff(np.append(local, b - a))
        keys = _unpacked(
            self.keys[lo:hi].copy(), self.decode, self.bits, self.text_ids, in_place=True
        )
        return keys.with_columns(
            pl.Series(c, v, dtype=pl.Int64) for c, v in (("m", m), ("s", s), ("q", q))
        )


def _sorted(
    frame: pl.DataFrame,
) -> (
    tuple[np.ndarray, np.ndarray, np.ndarray, tuple[int, int, int, pl.Series], tuple[int, int]]
    | None
):
    """``frame``'s packed keys sorted (:func:`_packed`, :func:`_sort_keys`), the order that
    sorts them, where each run of equal keys starts, and what decodes them (the decoding and
    the bit widths); None when the keys, with the row numbers, do not fit 64 bits. One scratch
    array holds the slot offsets, then the order."""
    scratch = np.empty(frame.height, dtype=np.uint64)
    packed = _packed(frame, scratch)
    if packed is None:
        return None
    key, decode, bits = packed
    ordered = _sort_keys(key, scratch)
    if ordered is None:
        return None
    k, order = ordered
    new = np.empty(k.size, dtype=bool)
    new[0] = True
    np.not_equal(k[1:], k[:-1], out=new[1:])
    return k, order, np.flatnonzero(new), decode, bits


def _sort_keys(
    k: np.ndarray, scratch: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """(``k`` sorted, the order that sorts it) by one sort of ``key << bits | row`` (several
    times faster than an argsort); None when the row numbers do not fit beside the keys in 64
    bits. ``k`` (uint64) is sorted in place: the first array returned is ``k`` itself; the
    order is written into ``scratch`` (uint64, as long as ``k``) when one is given.

    >>> [a.tolist() for a in _sort_keys(np.array([5, 3, 5, 1], dtype=np.uint64))]
    [[1, 3, 5, 5], [3, 1, 0, 2]]
    """
    row_bits = max(1, int(k.size - 1).bit_length())
    if k.size == 0 or int(k.max()).bit_length() + row_bits > 64:
        return None
    rows = np.empty(k.size, dtype=np.uint64) if scratch is None else scratch
    np.cumsum(np.broadcast_to(np.uint64(1), k.shape), out=rows)  # 1..n with no temporary
    rows -= np.uint64(1)
    k <<= np.uint64(row_bits)
    k |= rows
    ordered = sorted_u64(k)  # the keys are all distinct (row numbers): any sort gives these
    np.bitwise_and(ordered, np.uint64((1 << row_bits) - 1), out=rows)
    np.right_shift(ordered, np.uint64(row_bits), out=k)
    return k, rows.view(np.int64)  # < 2**63


def _unpacked(
    k: np.ndarray,
    decode: tuple[int, int, int, pl.Series],
    bits: tuple[int, int],
    text_ids: bool,
    *,
    in_place: bool = False,
) -> pl.DataFrame:
    """The columns cell, slot, user of packed keys ``k`` (:func:`_packed`'s decoding); with
    ``in_place`` the cells are made in ``k``'s own memory (one fresh array fewer).

    >>> k = np.array([(3 << 9) | (2 << 4) | 5], dtype=np.uint64)  # cell 3, slot 2, user 5
    >>> decode = (10, 2, 100, pl.Series([f"u{i}" for i in range(16)]))
    >>> _unpacked(k.copy(), decode, (5, 4), True).rows()
    [(55, 102, 'u5')]
    >>> _unpacked(k, decode, (5, 4), True, in_place=True).rows(), k.tolist()
    ([(55, 102, 'u5')], [55])
    """
    base, ones, slot0, users = decode
    slot_bits, user_bits = bits
    user_mask = np.uint64((1 << user_bits) - 1)
    slot_mask = np.uint64((1 << slot_bits) - 1)
    slot = k >> np.uint64(user_bits)  # each column made in place in one array
    slot &= slot_mask
    slot_keys = slot.view(np.int64)
    slot_keys += slot0
    user = k.astype(np.uint32)  # user_bits <= 32: the low 32 bits hold the code
    user &= np.uint32(user_mask)
    cell = k if in_place else k.copy()  # the cells last: they may overwrite the keys
    cell >>= np.uint64(slot_bits + user_bits)
    cell += np.uint64(base)
    cell <<= np.uint64(ones)
    cell |= np.uint64((1 << ones) - 1)
    return pl.DataFrame(
        {
            "cell": pl.Series(cell),
            "slot": pl.Series(slot_keys),
            "user": _user_column(users, user, text_ids),
        }
    )


def _user_column(users: pl.Series, codes: np.ndarray, text_ids: bool) -> pl.Series:
    """The users of ``codes`` (indices into the sorted ``users``): text, or an Enum of
    ``users``."""
    if text_ids:
        return users.gather(codes).cast(pl.String)
    return pl.Series(codes.astype(np.uint32, copy=False), dtype=pl.UInt32).cat.to(pl.Enum(users))


def _packed(
    frame: pl.DataFrame, scratch: np.ndarray | None = None
) -> tuple[np.ndarray, tuple[int, int, int, pl.Series], tuple[int, int]] | None:
    """(one uint64 key per row: cell code, slot offset, user code from the high bits down, so
    the key's order is (cell, slot, user) with the ids in text order; what decodes it: the
    cells' smallest high part and their common trailing 1 bits, the smallest slot, the users
    by code; the slot and user bit widths), or None when the three do not fit 64 bits (or
    there are no rows). The key is a new array the caller owns, built in place (each
    temporary of 10⁷ rows is 80 MB of fresh pages); ``scratch`` (uint64, one per row), when
    given, holds the slot offsets on the way."""
    if frame.height == 0:
        return None
    slot = frame.get_column("slot")
    slot0, slot1 = int(cast(int, slot.min())), int(cast(int, slot.max()))
    cell = frame.get_column("cell").to_numpy()
    # H3 ids of one resolution end in the same run of 1 bits (the unused digits, 7 each): drop
    # it, and what remains spans a small range
    ones = min(63, _trailing_ones(int(np.bitwise_and.reduce(cell))))
    key = cell >> np.uint64(ones)  # the cell's high part, then the whole key
    base = int(key.min())
    cell_bits = max(1, (int(key.max()) - base).bit_length())
    user = frame.get_column("user")
    users = pl.Series(user.dtype.categories) if isinstance(user.dtype, pl.Enum) else None
    if users is not None and users.is_sorted():
        user_codes = user.to_physical().to_numpy()
    else:
        users, codes = _dense(user.cast(pl.String))
        user_codes = codes.to_numpy()
    user_bits = max(1, int(users.len() - 1).bit_length())
    slot_bits = max(1, (slot1 - slot0).bit_length())
    if cell_bits + user_bits + slot_bits > 64:
        return None
    key -= np.uint64(base)
    key <<= np.uint64(slot_bits + user_bits)
    offset = np.empty(key.size, dtype=np.uint64) if scratch is None else scratch
    np.subtract(slot.cast(pl.Int64).to_numpy(), slot0, out=offset.view(np.int64))  # >= 0
    offset <<= np.uint64(user_bits)
    key |= offset
    del offset
    np.bitwise_or(key, user_codes, out=key)
    return key, (base, ones, slot0, users), (slot_bits, user_bits)


def _trailing_ones(x: int) -> int:
    """Number of trailing 1 bits of ``x``.

    >>> _trailing_ones(0b10111), _trailing_ones(0)
    (3, 0)
    """
    return ((x ^ (x + 1)) >> 1).bit_length()


def _dense(column: pl.Series) -> tuple[pl.Series, pl.Series]:
    """(distinct values in their sorted order, each row's index among them as UInt32): exact,
    by polars' hash maps."""
    distinct = column.unique().sort()
    codes = column.replace_strict(
        distinct, pl.int_range(distinct.len(), eager=True, dtype=pl.UInt32)
    )
    return distinct, codes
