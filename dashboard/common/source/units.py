"""The data's value unit and user noun, used in every label, CSV header and Learn.

One place to ask "what are we measuring, and who are the users?": pages and builders take a
:class:`Units` (builders as an argument, so they stay free of session state); pages get it from
:func:`current`, which reads the sidebar's choice (defaults: km/h and bus, the demo city's).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from core.data.tally import counted

VALUE_UNIT = "units_value"  # session-state key: "km/h", "mph", "knots", "m/s", ...
USER_NOUN = "units_user"  # session-state key: singular noun for a user ("bus", "ship", ...)


@dataclass(frozen=True, kw_only=True)
class Units:
    """What a value is measured in and what a user is called."""

    value: str = "km/h"
    user: str = "bus"

    @property
    def users(self) -> str:
        """Plural of the user noun (bus → buses, ship → ships, vehicle → vehicles)."""
        noun = self.user
        if noun.endswith(("s", "x", "ch", "sh")):
            return noun + "es"
        if noun.endswith("y") and noun[-2:-1] not in "aeiou":
            return noun[:-1] + "ies"
        return noun + "s"

    def count(self, n: int) -> str:
        """``n`` users, the noun agreeing with the number.

        >>> Units().count(1), Units().count(2_500), Units(user="ship").count(0)
        ('1 bus', '2,500 buses', '0 ships')
        """
        return counted(n, self.user, self.users)

    @property
    def squared(self) -> str:
        """The unit of a variance, e.g. (km/h)²."""
        return f"({self.value})²"


def current() -> Units:
    """The units the sidebar chose for the current data (defaults when none chosen yet)."""
    ss = st.session_state
    default = Units()
    return Units(value=ss.get(VALUE_UNIT) or default.value, user=ss.get(USER_NOUN) or default.user)
