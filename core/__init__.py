"""dp-hexplorer core: user-level differentially private mean estimation per hexagon and hour.

The library never imports a UI package. Data flows one way:
file -> prepared records -> per-HAT user summaries (:mod:`core.data`) -> grouping
(:mod:`core.grouping`) -> mechanisms (:mod:`core.mechanisms`) and analysis
(:mod:`core.worstcase`, :mod:`core.evaluation`, :mod:`core.citywide`); published releases
(:mod:`core.publish`).

See ``SPEC.md`` (shipped with the project's design notes) for every formula.
"""

from typing import TYPE_CHECKING, Any

from core.errors import HexplorerError, NotApplicableError

if TYPE_CHECKING:
    from core.hat import HatData

__all__ = ["HatData", "HexplorerError", "NotApplicableError"]


def __getattr__(name: str) -> Any:
    """``HatData`` is imported when first asked for (PEP 562): importing the package imports no
    numpy, so the ``hexplorer`` command can settle numpy's threads before numpy loads
    (:mod:`core.cli`)."""
    if name == "HatData":
        from core.hat import HatData

        return HatData
    raise AttributeError(f"module 'core' has no attribute {name!r}")
