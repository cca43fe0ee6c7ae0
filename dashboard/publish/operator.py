"""What the operator decides for the Publish page, never a visitor: whether the dashboard may
publish at all, and into which namespace.

Publishing from the dashboard is off unless the operator turns it on, with the
``HEXPLORER_PUBLISH=1`` environment variable or ``--publish`` after ``streamlit run app.py --``;
off, the page still previews a release and what it would cost. The namespace is
``HEXPLORER_NAMESPACE`` or ``--namespace NAME`` (default ``"default"``). The budget is set in the
ledger by the operator (``hexplorer ledger set-budget``); the page shows it and never changes it,
and it does not publish into a namespace without one.

Pure functions (no Streamlit), tested in ``tests/dashboard/test_publish_operator.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence

from core.publish.records import DEFAULT_NAMESPACE, check_namespace

PUBLISH_ENV = "HEXPLORER_PUBLISH"
PUBLISH_ARG = "--publish"
NAMESPACE_ENV = "HEXPLORER_NAMESPACE"
NAMESPACE_ARG = "--namespace"


def publishing_enabled(
    environ: Mapping[str, str] | None = None, argv: Sequence[str] | None = None
) -> bool:
    """True when the operator turned publishing on (``--publish`` or ``HEXPLORER_PUBLISH=1``).

    >>> publishing_enabled({}, ["app.py"]), publishing_enabled({"HEXPLORER_PUBLISH": "1"}, [])
    (False, True)
    >>> publishing_enabled({"HEXPLORER_PUBLISH": "0"}, ["app.py", "--publish"])
    True
    """
    environ = os.environ if environ is None else environ
    argv = sys.argv if argv is None else argv
    if PUBLISH_ARG in list(argv)[1:]:
        return True
    return environ.get(PUBLISH_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def namespace(environ: Mapping[str, str] | None = None, argv: Sequence[str] | None = None) -> str:
    """The namespace the dashboard publishes into (the operator's; ``"default"`` unless named).

    >>> namespace({}, ["app.py"]), namespace({}, ["app.py", "--namespace", "buses"])
    ('default', 'buses')
    """
    environ = os.environ if environ is None else environ
    args = list(sys.argv if argv is None else argv)
    named = None
    for i, arg in enumerate(args):
        if arg == NAMESPACE_ARG and i + 1 < len(args):
            named = args[i + 1]
        elif arg.startswith(NAMESPACE_ARG + "="):
            named = arg.split("=", 1)[1]
    if named is None:
        named = environ.get(NAMESPACE_ENV) or DEFAULT_NAMESPACE
    return check_namespace(named.strip() or DEFAULT_NAMESPACE)
