"""Group statistics computed once: members, passing members, and the timed ones fastest
first (fastest member, slowest, spread = slowest / fastest). The dataset card, ``ptxds
report``/``info`` and the verifier's summary all read them from here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


def _field(member, name: str):
    return member.get(name) if isinstance(member, dict) else getattr(member, name)


@dataclass(frozen=True)
class GroupStats:
    """``timed``: (median us, name) of each passing member with a median, fastest first
    (ties by name)."""
    members: int
    passed: int
    timed: tuple

    @property
    def fastest(self) -> Optional[str]:
        return self.timed[0][1] if self.timed else None

    @property
    def fastest_us(self) -> Optional[float]:
        return self.timed[0][0] if self.timed else None

    @property
    def slowest_us(self) -> Optional[float]:
        return self.timed[-1][0] if self.timed else None

    @property
    def spread(self) -> Optional[float]:
        """Slowest over fastest passing member (None with fewer than two timed members)."""
        return self.timed[-1][0] / self.timed[0][0] if len(self.timed) > 1 else None


def group_stats(members) -> GroupStats:
    """Statistics of one group's rows (KernelRecords, report members or row dicts with
    ``name``, ``status`` and ``time_us_median``). A member is timed when it passed and
    has a nonzero median time."""
    members = list(members)
    passed = [m for m in members if _field(m, "status") == "passed"]
    timed = sorted((_field(m, "time_us_median"), _field(m, "name")) for m in passed if _field(m, "time_us_median"))
    return GroupStats(len(members), len(passed), tuple(timed))
