"""The exceptions affine_ucp raises.

Every error of the C++ core arrives as a ValueError carrying the message the
command-line tools print; the classes here add structure where a caller can
act on it.
"""

from typing import Any, Dict, List, Optional


class VerificationError(ValueError):
    """A map fails verification (P1 coverage, P5 homogeneity, or the tiling
    of a shard).

    ``str(error)`` is the tools' diagnostic. The first violation's place is
    in ``param``, ``kind``, ``rank``, ``piece`` and ``element`` (a
    multi-index into F, or into the shard for tiling violations), and every
    violation, as a dict with the same keys plus ``message`` and ``count``,
    in ``violations``.
    """

    def __init__(self, param: str, report: Dict[str, Any]):
        super().__init__(report["message"])
        self.param = param
        self.report = report
        self.violations: List[Dict[str, Any]] = list(report["violations"])
        first = self.violations[0] if self.violations else {}
        self.kind: Optional[str] = first.get("kind")
        self.rank: Optional[int] = first.get("rank")
        self.piece: Optional[int] = first.get("piece")
        self.element: Optional[List[int]] = first.get("element")
