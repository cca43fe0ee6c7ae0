"""The ledger's secret key and the keyed hashes it makes (user ids, data fingerprints).

A ledger never stores a user id, nor an unkeyed digest of one: each id is stored as
HMAC-SHA-256 under a secret key that is *not* in the ledger file, so a copy of the file alone
cannot be checked against guessed ids (a salted SHA-256 with the salt in the same file can: 10⁶
ship MMSIs take a second). The data fingerprints of the request keys (SHA-256 of the true
per-user sums) are keyed the same way, so the ledger and its audit export carry no unkeyed
digest of a true value either.

The key is, in this order: the ``key`` given to :class:`core.publish.Ledger`, the environment
variable ``HEXPLORER_LEDGER_KEY`` (at least 32 characters, e.g. ``secrets.token_hex(32)``), or
the key file beside the ledger, ``<ledger>.key``: 32 random bytes (hex), created with
owner-only permissions (0600) when the ledger is made, refused when others may read it. The
ledger keeps a check value (an HMAC of a constant) so that opening it with another key, or
without its key, is one clear line, never a second ledger of fresh budgets.

Ids are hashed as given: canonicalising them (spaces, ``366000000.0``, Unicode forms, case if
the operator asks) is the data engines' job (``core.data``), before they reach a ledger.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path

from core.errors import HexplorerError

#: Environment variable holding the ledger key (overrides the key file).
KEY_ENV = "HEXPLORER_LEDGER_KEY"
#: Fewest characters of a key given in :data:`KEY_ENV`.
MIN_KEY_CHARS = 32

_CHECK = b"hexplorer-ledger-key-check"
_USER = b"hexplorer-user\x00"
_FINGERPRINT = b"hexplorer-fingerprint\x00"


def key_path(ledger: Path) -> Path:
    """The key file beside ``ledger``: ``<ledger>.key``.

    >>> key_path(Path("/srv/ledger.sqlite")).name
    'ledger.sqlite.key'
    """
    return ledger.with_name(ledger.name + ".key")


def _from_env() -> bytes | None:
    value = os.environ.get(KEY_ENV)
    if value is None or value == "":
        return None
    if len(value) < MIN_KEY_CHARS:
        raise HexplorerError(
            f"${KEY_ENV} must hold at least {MIN_KEY_CHARS} characters (e.g. the output of "
            "`python -c 'import secrets; print(secrets.token_hex(32))'`)."
        )
    return value.encode()


def _read_key_file(path: Path) -> bytes:
    try:
        info = path.stat()
    except OSError as exc:
        raise HexplorerError(f"Cannot read the key file {path}: {exc.strerror}.") from None
    if info.st_mode & 0o077 and os.name == "posix":
        raise HexplorerError(
            f"Key file {path} may be read by others (mode {stat.filemode(info.st_mode)}); "
            f"make it the owner's only: chmod 600 {path}."
        )
    try:
        text = path.read_text(encoding="ascii").strip()
        key = bytes.fromhex(text)
    except (UnicodeDecodeError, ValueError):
        raise HexplorerError(f"Key file {path} is not a hexplorer ledger key (hex).") from None
    except OSError as exc:
        raise HexplorerError(f"Cannot read the key file {path}: {exc.strerror}.") from None
    if len(key) < 16:
        raise HexplorerError(f"Key file {path} is too short to be a hexplorer ledger key.")
    return key


def _create_key_file(path: Path) -> None:
    """32 random bytes (hex) at ``path``, 0600, written whole to a temporary file then linked
    into place: a concurrent creator's complete key wins, never half a key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(secrets.token_hex(32) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another publisher made it first: use theirs
    finally:
        Path(tmp).unlink(missing_ok=True)


def load_key(ledger: Path, *, given: bytes | None, create: bool) -> bytes | None:
    """The ledger's key: ``given``, else ``$HEXPLORER_LEDGER_KEY``, else its key file (made when
    ``create`` and absent). None when there is none and none may be made.

    Raises
    ------
    HexplorerError
        A key too short, a key file others may read, or unreadable.
    """
    if given is not None:
        if len(given) < 16:
            raise HexplorerError("A ledger key must hold at least 16 bytes.")
        return given
    env = _from_env()
    if env is not None:
        return env
    path = key_path(ledger)
    if not path.exists():
        if not create:
            return None
        try:
            _create_key_file(path)
        except OSError as exc:
            raise HexplorerError(f"Cannot create the key file {path}: {exc.strerror}.") from None
    return _read_key_file(path)


def key_check(key: bytes) -> str:
    """The check value a ledger keeps of its key (HMAC of a constant: it reveals no key)."""
    return hmac.digest(key, _CHECK, "sha256").hex()


def user_hashes(
    key: bytes, user_ids: Sequence, *, salt: str | None = None, namespace: str = ""
) -> list[str]:
    """HMAC-SHA-256 (hex) of each user id under ``key``; raises if two ids hash alike.

    A native ledger hashes the id itself, so one user has one hash in every namespace (the
    ledger can warn when a namespace opens for users charged in another). A ledger migrated
    from schema 2 (``salt`` given) hashes its old salted digest, SHA-256(salt ‖ namespace ‖ 0 ‖
    id), which is what its rows held.

    >>> key = bytes(32)
    >>> user_hashes(key, ["a", "b"]) == user_hashes(key, ["a", "b"], namespace="other")
    True
    >>> user_hashes(key, ["a"]) != user_hashes(bytes(range(32)), ["a"])
    True
    """
    if salt is None:
        out = [hmac.digest(key, _USER + str(u).encode(), "sha256").hex() for u in user_ids]
    else:
        out = [rekey(key, old) for old in salted_digests(salt, namespace, user_ids)]
    if len(set(out)) != len(out):
        raise HexplorerError("user ids of one release must be distinct")
    return out


def salted_digests(salt: str, namespace: str, user_ids: Sequence) -> list[str]:
    """The unkeyed salted SHA-256 of schema 2 ledgers (what :func:`rekey` turns into a hash)."""
    prefix = bytes.fromhex(salt) + namespace.encode() + b"\x00"
    return [hashlib.sha256(prefix + str(u).encode()).hexdigest() for u in user_ids]


def rekey(key: bytes, old_digest: str) -> str:
    """HMAC-SHA-256 under ``key`` of a schema 2 ledger's salted digest (hex)."""
    return hmac.digest(key, _USER + old_digest.encode(), "sha256").hex()


def seal(key: bytes, fingerprint: str) -> str:
    """A data fingerprint keyed with ``key`` (hex): what request keys and bodies hold.

    >>> len(seal(bytes(32), "ab" * 32))
    64
    """
    return hmac.digest(key, _FINGERPRINT + fingerprint.encode(), "sha256").hex()
