"""The per-HAT seed rule of :mod:`core.citywide.batch`, and the first Laplace draw of many HATs'
generators at once.

The generator of HAT ``hat`` for mechanism ``name`` and seed ``seed`` is
``numpy.random.Generator(numpy.random.Philox(key=k))`` with
``k = int.from_bytes(blake2b(f"{seed}|{name}|{hat}", digest_size=16), "little")``, so a HAT's
value does not depend on which other HATs are released with it (nor on the engine that
releases it). :func:`first_laplace` computes the first Laplace draw of every key directly
(Philox4x64-10 on the counter 1, as numpy does, then numpy's ``random_laplace`` with the C
library's ``log``); a test checks it against numpy.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

__all__ = ["first_laplace", "hat_key", "hat_keys", "hat_rng"]


def hat_key(seed: int, mechanism: str, hat: str) -> int:
    """The 128-bit Philox key of one HAT's generator (see the module's seed rule).

    >>> hat_key(7, "baseline", "8742d9d69ffffff/h08") == hat_key(7, "baseline", "8742d9d69ffffff/h08")
    True
    """
    text = f"{int(seed)}|{mechanism}|{hat}".encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=16).digest(), "little")


def hat_rng(seed: int, mechanism: str, hat: str) -> np.random.Generator:
    """The generator of HAT ``hat`` for ``mechanism`` under ``seed`` (the module's seed rule)."""
    return np.random.Generator(np.random.Philox(key=hat_key(seed, mechanism, hat)))


_M64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_M32 = np.uint64(0xFFFFFFFF)
_PHILOX_M0 = np.uint64(0xD2E7470EE14C6C93)
_PHILOX_M1 = np.uint64(0xCA5A826395121157)
_PHILOX_W0 = np.uint64(0x9E3779B97F4A7C15)
_PHILOX_W1 = np.uint64(0xBB67AE8584CAA73B)


def _mulhilo(a: np.uint64, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low 64 bits of the 128-bit products a * b (uint64 arrays, 32-bit limbs)."""
    a0, a1 = a & _M32, a >> np.uint64(32)
    b0, b1 = b & _M32, b >> np.uint64(32)
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> np.uint64(32)) + (p01 & _M32) + (p10 & _M32)
    hi = p11 + (p01 >> np.uint64(32)) + (p10 >> np.uint64(32)) + (mid >> np.uint64(32))
    lo = a * b  # wraps modulo 2**64
    return hi, lo


def _philox_first(k0: np.ndarray, k1: np.ndarray) -> np.ndarray:
    """First 64-bit output of ``Philox(key=[k0, k1])`` (counter 0, incremented to 1 first)."""
    n = k0.size
    c = [
        np.ones(n, np.uint64),
        np.zeros(n, np.uint64),
        np.zeros(n, np.uint64),
        np.zeros(n, np.uint64),
    ]
    key0, key1 = k0.copy(), k1.copy()
    for r in range(10):
        if r:
            key0 = key0 + _PHILOX_W0
            key1 = key1 + _PHILOX_W1
        hi0, lo0 = _mulhilo(_PHILOX_M0, c[0])
        hi1, lo1 = _mulhilo(_PHILOX_M1, c[2])
        c = [hi1 ^ c[1] ^ key0, lo1, hi0 ^ c[3] ^ key1, lo0]
    return c[0]


def hat_keys(seed: int, mechanism: str, hats) -> np.ndarray:
    """:func:`hat_key` of many HATs as a (H, 2) uint64 array (low word, high word)."""
    prefix = hashlib.blake2b(digest_size=16)
    prefix.update(f"{int(seed)}|{mechanism}|".encode())
    fresh = prefix.copy
    digests: list[bytes] = []
    append = digests.append
    for hat in hats:
        h = fresh()
        h.update(hat.encode() if isinstance(hat, str) else str(hat).encode())
        append(h.digest())
    return np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, 2).astype(np.uint64)


def first_laplace(keys: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """``Generator(Philox(key=k)).laplace(0.0, scale_k, 1)[0]`` for every key, vectorised.

    ``keys`` is (H, 2) uint64 (:func:`hat_keys`). numpy's ``random_laplace``: U = next_double;
    U >= 0.5 gives ``0 - b log(2 - U - U)``, 0 < U < 0.5 gives ``0 + b log(U + U)``; U = 0
    (probability 2**-53) draws again, done here by numpy itself for that key. ``log`` is the C
    library's (Python's ``math.log``), as in numpy's sampler.
    """
    keys = np.asarray(keys, dtype=np.uint64).reshape(-1, 2)
    with np.errstate(over="ignore"):
        bits = _philox_first(keys[:, 0].copy(), keys[:, 1].copy())
    u = (bits >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)
    scale = np.broadcast_to(np.asarray(scale, dtype=np.float64), u.shape)
    upper = u >= 0.5
    arg = np.where(upper, 2.0 - u - u, u + u)
    positive = arg > 0  # arg = 0 only for U = 0, drawn again below
    logs = np.fromiter(map(math.log, np.where(positive, arg, 1.0).tolist()), float, arg.size)
    out = np.where(upper, 0.0 - scale * logs, 0.0 + scale * logs)
    for i in np.flatnonzero(u == 0.0).tolist():  # pragma: no cover - probability 2**-53
        key = int(keys[i, 0]) | (int(keys[i, 1]) << 64)
        out[i] = np.random.Generator(np.random.Philox(key=key)).laplace(0.0, scale[i], 1)[0]
    return out
