"""dp-hexplorer core: user-level differentially private mean estimation per hexagon and hour.

The library never imports a UI package. Data flows one way:
file -> prepared records -> per-HAT user summaries (:mod:`core.data`) -> grouping
(:mod:`core.grouping`) -> mechanisms (:mod:`core.mechanisms`) and analysis
(:mod:`core.worstcase`, :mod:`core.evaluation`, :mod:`core.citywide`); published releases
(:mod:`core.publish`).

See ``SPEC.md`` (shipped with the project's design notes) for every formula.
"""

from core.errors import HexplorerError, NotApplicableError
from core.hat import HatData

__all__ = ["HatData", "HexplorerError", "NotApplicableError"]
