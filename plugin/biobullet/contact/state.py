"""The discrete state of one contact during one run, and its log of contact intervals.

`ContactState` holds what the force depends on besides (x, ẋ): whether the contact is active (between an onset
and a separation located by the engine), the approach velocity δ̇⁻ captured at onset, and — for friction laws
discontinuous at zero slip — whether the contact is sliding (with the slip direction at the last event) or at
rest. It is owned by the run (reference engine or bridge), never by the immutable Model.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

#: slip speed [m/s] below which a Coulomb contact that reversed its slip is at rest (friction off) and above which
#: a resting contact slides again (switched Coulomb has no stiction: see `friction.Coulomb`)
REST_SPEED = 1.0e-6


@dataclass
class ContactInterval:
    """One contact interval (SI units). `end` None while open; `initial` True if in contact at the run start."""

    start: float
    impact_velocity: float                 # δ̇⁻ at onset [m/s] (> 0 approaching)
    end: float | None = None
    rebound_velocity: float | None = None  # −δ̇ at separation [m/s] (> 0 leaving)
    peak_force: float = 0.0                # max F_N [N]
    peak_force_time: float | None = None
    impulse: float = 0.0                   # ∫ F_N dt [N·s]
    max_penetration: float = 0.0           # [m]
    dissipated_normal: float = 0.0         # ∫ (F_N − F_N(δ, 0)) δ̇ dt [J] (≥ 0)
    dissipated_friction: float = 0.0       # −∫ F_T·v_t dt [J] (≥ 0)
    initial: bool = False

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start

    @property
    def restitution(self) -> float | None:
        """rebound / impact velocity (None while open, for an initial contact, or for one ended without a separation:
        the bridge's interval cut by a reset or restoreState)."""
        if self.end is None or self.initial or self.rebound_velocity is None or not self.impact_velocity > 0:
            return None
        return self.rebound_velocity / self.impact_velocity

    def as_dict(self) -> dict:
        out = asdict(self)
        out["duration"], out["restitution"] = self.duration, self.restitution
        return out


@dataclass
class ContactState:
    """Mutable per-run state of one contact (see the module docstring)."""

    active: bool = False
    impact_velocity: float = 0.0
    resting: bool = True
    slip_direction: np.ndarray | None = None
    intervals: list[ContactInterval] = field(default_factory=list)

    @property
    def current(self) -> ContactInterval | None:
        return self.intervals[-1] if self.active and self.intervals else None

    def touch(self, t: float, delta_dot: float, *, initial: bool = False) -> None:
        """Onset at t: store δ̇⁻ (m/s) and open an interval."""
        self.active = True
        self.impact_velocity = float(delta_dot)
        self.intervals.append(ContactInterval(start=float(t), impact_velocity=float(delta_dot), initial=initial))

    def separate(self, t: float, delta_dot: float) -> None:
        """Separation at t: close the interval (rebound velocity −δ̇)."""
        self.active = False
        if self.intervals and self.intervals[-1].end is None:
            self.intervals[-1].end = float(t)
            self.intervals[-1].rebound_velocity = -float(delta_dot)

    def log(self) -> dict:
        return {"intervals": [i.as_dict() for i in self.intervals]}
