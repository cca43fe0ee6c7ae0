"""Errors a user can cause and fix.

Every error raised for bad input is a :class:`HexplorerError` whose message is one line that
names the problem (the parameter or column and the offending value). The command line prints it
and exits with status 2; the dashboard shows it and keeps the previous state.
"""


class HexplorerError(ValueError):
    """Bad input: a wrong column, a text speed, an empty file, epsilon <= 0, an unknown HAT..."""


class NotApplicableError(HexplorerError):
    """A mechanism cannot run on this input (for example, no array of m_UB samples can be formed)."""
