"""The operator's switches for the Publish page: publishing off unless turned on, the namespace."""

from __future__ import annotations

import pytest

from core.errors import HexplorerError
from dashboard.publish import operator


@pytest.mark.parametrize(
    ("environ", "argv", "expected"),
    [
        ({}, ["app.py"], False),
        ({"HEXPLORER_PUBLISH": "0"}, ["app.py"], False),
        ({"HEXPLORER_PUBLISH": ""}, ["app.py"], False),
        ({"HEXPLORER_PUBLISH": "1"}, ["app.py"], True),
        ({"HEXPLORER_PUBLISH": "yes"}, ["app.py"], True),
        ({}, ["app.py", "--publish"], True),
        ({}, ["--publish"], False),  # the script's own name is not an argument
        ({}, ["app.py", "--publisher"], False),
    ],
)
def test_publishing_is_the_operators_switch(environ, argv, expected):
    assert operator.publishing_enabled(environ, argv) is expected


def test_the_namespace_is_the_operators():
    assert operator.namespace({}, ["app.py"]) == "default"
    assert operator.namespace({"HEXPLORER_NAMESPACE": "taxis"}, ["app.py"]) == "taxis"
    assert (
        operator.namespace({"HEXPLORER_NAMESPACE": "taxis"}, ["app.py", "--namespace=bus"]) == "bus"
    )
    with pytest.raises(HexplorerError, match="namespace"):
        operator.namespace({}, ["app.py", "--namespace", "a\nb"])
