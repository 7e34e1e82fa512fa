"""The points and reasons every category collects (:mod:`rankmap.explain.scoring` fills them)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from rankmap.categories import CATEGORIES

# A finding whose detail holds this names a symptom, not its category: the scoring lets the rest
# of the input decide (rankmap.explain.scoring).
UNDECIDED_MARK = "The log alone does not say"
# Where PyTorch's reading of the current device is documented (cited by several rules).
PT_SECTION = "reference/pytorch_nccl.md §1"


@dataclass
class Scores:
    """Points and reasons per category."""

    points: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    reasons: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))
    evidence: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    failure: bool = False  # a specific message or finding of this family failed
    weak_failure: bool = False  # a failure class (a prior only: rankmap.explain.priors) matched
    failure_class: str | None = None  # the most specific failure class matched (its signal id)
    # a failure that points at the mapping (its strongest support is a mapping category, not
    # ``other``): what lets context name a mapping cause at warning severity or above
    mapping_failure: bool = False
    # the job printed a failure outside the mapping (RM040: an OOM of one process per GPU, a CUDA
    # error inside NCCL that names another cause)
    outside_printed: bool = False
    # the job printed a rendezvous/socket failure (RM906, RM041): with no failure of this family
    # printed beside it, that is what failed — prose words of the family are context then
    network_printed: bool = False
    named: tuple[tuple[int, ...], tuple[str, ...]] = ((), ())
    # a fix a combination names with its support, for a best guess of that category that this
    # support leads (the category's general fix otherwise)
    fixes: dict[str, tuple[float, str]] = field(default_factory=dict)

    def add(self, cat: str, pts: float, reason: str, evidence: str | None = None) -> None:
        """Add points (negative: against) with the reason quoted in the finding."""
        self.points[cat] += pts
        self.reasons[cat].append((pts, reason))
        if evidence and evidence not in self.evidence[cat]:
            self.evidence[cat].append(evidence)

    def name_fix(self, cat: str, pts: float, fix: str) -> None:
        """The fix that goes with a support of ``pts`` points for ``cat``."""
        if pts > self.fixes.get(cat, (0.0, ""))[0]:
            self.fixes[cat] = (pts, fix)

    def fix_of(self, cat: str) -> str | None:
        """The named fix of ``cat`` where its support is the category's strongest."""
        named = self.fixes.get(cat)
        return named[1] if named and named[0] >= self.strongest(cat) else None

    def ranked(self) -> list[tuple[str, float]]:
        """Categories by points, best first; on equal points ``other`` first (a false alarm of
        a mapping category costs more than a miss), then the strongest support, then contract
        order."""
        order = {c: i for i, c in enumerate(CATEGORIES)}
        return sorted(
            ((c, p) for c, p in self.points.items() if p > 0),
            key=lambda cp: (-cp[1], cp[0] != "other", -self.strongest(cp[0]), order[cp[0]]),
        )

    def note_failure(self, supports: tuple[tuple[str, float], ...]) -> None:
        """Record a failure signal with these supports: does it point at the mapping?"""
        if points_at_mapping(dict(supports)):
            self.mapping_failure = True

    def signal_points(self, cat: str, sid: str) -> float:
        """What catalogue signal ``sid`` added to ``cat`` (its reasons start ``[sid]``)."""
        return sum(p for p, why in self.reasons.get(cat, ()) if why.startswith(f"[{sid}]"))

    def take_back(self, sid: str, reason: str) -> None:
        """Take back from every mapping category (not ``other``) what catalogue signal ``sid``
        added to it: a fact beside it says the signal names no mapping cause here."""
        for cat in [c for c in self.reasons if c != "other"]:
            if (added := self.signal_points(cat, sid)) > 0:
                self.add(cat, -added, reason)

    def strongest(self, cat: str) -> float:
        """The biggest single support of ``cat``."""
        return max((p for p, _ in self.reasons.get(cat, ())), default=0.0)


def points_at_mapping(supports: dict[str, float]) -> bool:
    """Whether a failure's strongest support is a mapping category (not ``other``)."""
    positive = {c: w for c, w in supports.items() if w > 0}
    return bool(positive) and max(positive, key=lambda c: positive[c]) != "other"
