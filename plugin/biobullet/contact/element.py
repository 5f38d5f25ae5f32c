"""The `<contact>` force element: a point or sphere on a link against a ground plane, compliant normal law and
friction law applied at the contact point through the Jacobian transpose.

    <contact name="C" link="L" xyz="0 0 0" radius="0.05" ground="plane" ground_height="0" ground_normal="0 0 1"
             normal_law="hunt_crossley" stiffness="1e6" exponent="1.5" restitution="0.8"
             friction_law="regularized" mu="0.5" v0="1e-3"/>

Geometry and signs: `contact.geometry`; laws: `contact.normal`, `contact.friction`. Generalized force
τ = J_pᵀ (F_N n + F_T), F_T = friction(v_t, F_N).

Discrete state (per run, `contact.state.ContactState`, see `integrate.discrete`): the engine locates δ = 0
(both directions, restart) and the action there switches the contact on/off and captures δ̇⁻ at onset — the
restitution laws need it. Laws that clip (Kelvin–Voigt) also get a restart at the release point (the unclipped
force reaching zero), and switched Coulomb friction at slip reversal (the contact then rests: zero friction
force, no stiction) and at restarting slip (|v_t| = REST_SPEED). While inactive the normal force is zero (trial
stages beyond an onset do not see a stale δ̇⁻); laws acting outside contact (kelvin_voigt_smooth) are never gated.
Likewise a sliding contact's friction keeps opposing its slide past the slip reversal until that is located
(`kernels._contact_forces_py`). Without stiction a contact held at rest by a tangential load below μ F_N chatters
between rest and slip; the run stops with an error after CHATTER_CYCLES such steady cycles (`_watch_chatter`).

Energy: V = ∫₀^δ F_N(ξ, 0) dξ (elastic, `law_potential`), dissipated power (F_N − F_N(δ, 0)) δ̇ − F_T·v_t ≥ 0
(every law is non-decreasing in δ̇, and μ_eff ≥ 0), so T + V_g + V − W + D is conserved along a run.

Outside a run (no discrete state, e.g. `applied_forces` on the template element) the contact is taken active iff
δ > 0, with δ̇⁻ = max(δ̇, floor): an approximation for the restitution laws.
"""
from __future__ import annotations

import copy
import math

import numpy as np
from scipy.optimize import minimize_scalar

from biobullet.core.errors import SolverError, SourceRef, did_you_mean
from biobullet.core.frozen import set_parameter
from biobullet.core.attributes import number, to_float, vector3
from biobullet.forces.base import ForceElement, register_force
from biobullet.core.events import Event
from biobullet.contact.base import FrictionLaw, NormalLaw
from biobullet.contact.geometry import ContactKinematics, GroundPlane, sphere_kinematics
from biobullet.contact.kernels import sync_state
from biobullet.contact.normal import Hertz, KelvinVoigt, KelvinVoigtSmooth
from biobullet.contact.registry import (friction_law_from_attributes, friction_law_names, get_friction_law, get_normal_law,
                       normal_law_from_attributes, normal_law_names)
from biobullet.contact.state import REST_SPEED, ContactState

COMMON_ATTRIBUTES = ("name", "link", "xyz", "radius", "ground", "ground_height", "ground_normal", "normal_law",
                     "friction_law")
GROUNDS = ("plane",)
_GAUSS = np.polynomial.legendre.leggauss(8)
_GAUSS_V = np.polynomial.legendre.leggauss(48)
_PEAK_GRID = 9


def law_potential(law: NormalLaw, delta: float) -> float:
    """V(δ) = ∫₀^δ F_N(ξ, 0) dξ [J] (closed form for the built-ins, 48-point Gauss–Legendre otherwise)."""
    d = float(delta)
    outside = law.acts_outside_contact and law.adhesion
    if d <= 0.0 and not outside:
        return 0.0
    if isinstance(law, KelvinVoigtSmooth):
        k, c = law.stiffness, law.smoothing
        atan = math.atan(c * d)
        return k * (0.25 * d * d + (0.5 * d * d * atan + (atan - c * d) / (2.0 * c * c)) / math.pi)
    if isinstance(law, KelvinVoigt):
        return 0.5 * law.stiffness * d * d
    if isinstance(law, Hertz):  # also the restitution laws: F(δ, 0) = K δⁿ
        n = law.exponent
        return law.stiffness * d ** (n + 1.0) / (n + 1.0)
    nodes, weights = _GAUSS_V
    xi = 0.5 * d * (nodes + 1.0)
    vi = 1.0 if law.needs_impact_velocity else None
    return 0.5 * d * float(weights @ np.asarray(law.force(xi, np.zeros_like(xi), vi)))


#: g of the touch event at δ = 0 exactly [m], signed by the contact's side: far below any resolved penetration
_TOUCHING = 1e-300

#: a switched-friction contact that slides from rest back to rest this many times in a row, each slide shorter than
#: CHATTER_SLIDE [s] and each rest as long as the first to CHATTER_SPREAD (relative), chatters steadily (no
#: stiction: `Contact._watch_chatter`)
CHATTER_CYCLES, CHATTER_SLIDE, CHATTER_SPREAD = 1000, 1e-4, 0.01

#: a contact that starts with an elastic force above this many model weights gets a warning (`Contact.begin`)
DEEP_START_WEIGHTS = 100.0


@register_force("contact")
class Contact(ForceElement):
    """Compliant point/sphere–plane contact (see the module docstring). Immutable; run state via `for_run`."""

    switched = True

    def __init__(self, name: str, link: str, xyz, normal_law: NormalLaw, friction_law: FrictionLaw | None = None,
                 radius: float = 0.0, ground: GroundPlane | None = None, source: SourceRef | None = None) -> None:
        super().__init__(name, source or SourceRef("<python>", f'<contact name="{name}">'))
        if not isinstance(normal_law, NormalLaw):
            raise self.source.error("normal_law", f"{normal_law!r} is not a NormalLaw",
                                    "one of: " + ", ".join(normal_law_names()))
        if friction_law is not None and not isinstance(friction_law, FrictionLaw):
            raise self.source.error("friction_law", f"{friction_law!r} is not a FrictionLaw",
                                    "one of: " + ", ".join(friction_law_names()))
        self.link = link
        self.xyz = np.array(xyz, dtype=float).reshape(3)
        self.radius = to_float(self.source, "radius", radius, non_negative=True, expected="a radius ≥ 0 (m)")
        self.ground = ground or GroundPlane()
        self.normal_law = normal_law
        self.friction_law = friction_law if friction_law is not None else get_friction_law("none")()
        self._state: ContactState | None = None
        self._model = None

    # ------------------------------------------------------------------ construction from XML
    @classmethod
    def from_description(cls, model, element) -> "Contact":
        s, a = element.source, element.attributes
        if not a.get("normal_law"):
            raise s.error("normal_law", "missing required attribute", "one of: " + ", ".join(normal_law_names()))
        normal_cls = get_normal_law(a["normal_law"], s)
        friction_cls = get_friction_law(a.get("friction_law", "none"), s)
        allowed = set(COMMON_ATTRIBUTES) | set(friction_cls.attributes)
        if normal_cls is not None:
            allowed |= set(normal_cls.attributes) | ({"exponent"} if issubclass(normal_cls, KelvinVoigt) else set())
        for key in a:
            if key not in allowed:
                owner = ""
                if normal_cls is not None and (key in _all_law_attributes()):
                    owner = (f" by normal_law '{normal_cls.law_name}' or friction_law "
                             f"'{friction_cls.law_name}'")
                raise s.error(key, f"unknown attribute or not used{owner}",
                              "one of " + ", ".join(sorted(allowed)))
        link = a.get("link")
        if not link:
            raise s.error("link", "missing required attribute", "the name of a <link>")
        if link not in model.link_names:
            raise s.error("link", f"unknown link {link!r}{did_you_mean(link, model.link_names)}",
                          "the name of a <link> in this file")
        ground = a.get("ground", "plane").strip()
        if ground not in GROUNDS:
            raise s.error("ground", f"unknown ground {ground!r}", "one of: " + ", ".join(GROUNDS))
        normal = vector3(s, a, "ground_normal") if "ground_normal" in a else np.array([0.0, 0.0, 1.0])
        scale = float(np.max(np.abs(normal)))   # (scaled first: the norm of "1e300 1e300 1e300" overflowed to inf,
        if scale == 0.0:                        # the normal became the zero vector and the ball fell through)
            raise s.error("ground_normal", "is the zero vector", "a non-zero direction (out of the ground)")
        normal = normal / scale
        normal = normal / np.linalg.norm(normal)
        plane = GroundPlane(number(s, a, "ground_height", 0.0), tuple(float(v) for v in normal))
        law = normal_law_from_attributes(a, s)
        friction = friction_law_from_attributes(a, s)
        name = a.get("name") or f"contact_{link}"
        return cls(name, link, vector3(s, a, "xyz"), law, friction,
                   number(s, a, "radius", 0.0, non_negative=True), plane, source=s)

    # ------------------------------------------------------------------ per-run state (integrate.discrete)
    def for_run(self, model) -> "Contact":
        run = copy.copy(self)
        run._state, run._model, run._last = ContactState(), model, None
        run._unrefined = {}   # sample columns whose largest value was a step's last (`_step_maximum`)
        run._chatter = (0, None, None, None)   # (cycles, first rest, rest start, slide start) (`_watch_chatter`)
        return run

    def start_run(self, model, t0: float, x0: np.ndarray, xd0: np.ndarray) -> None:
        self.begin(model, t0, self.kinematics(model, x0, xd0))

    def begin(self, model, t0: float, kin: ContactKinematics) -> None:
        """The run's discrete state from the initial contact kinematics (engine and bridge): a contact already
        touching its ground starts an initial interval. A start far inside the ground (elastic force above
        DEEP_START_WEIGHTS model weights) is almost always a mistake of the initial pose or of the ground height
        and makes the first steps explosive and stiff: one warning says so."""
        if kin.delta > 0.0:
            self._state.touch(t0, kin.delta_dot, initial=True)
            weight = model.total_mass * float(np.linalg.norm(model.gravity))
            elastic = float(self.normal_law.force(kin.delta, 0.0, 1.0 if self.normal_law.needs_impact_velocity
                                                  else None))
            if weight > 0.0 and elastic > DEEP_START_WEIGHTS * weight:
                import warnings
                warnings.warn(f"{model.file}: <contact link=\"{self.link}\"> ({self.name}) starts {kin.delta:.3g} m "
                              f"inside its ground (elastic force {elastic:.3g} N = {elastic / weight:.0f} × the "
                              f"model's weight): check the initial pose and the ground height", stacklevel=2)
        sync_state(self._state, self.friction_law.discontinuous, t0, kin.delta, kin.delta_dot, kin.slip)

    def run_log(self) -> dict:
        return self._state.log() if self._state is not None else {"intervals": []}

    @property
    def state(self) -> ContactState | None:
        """The run's discrete state (None on the model's template element)."""
        return self._state

    # ------------------------------------------------------------------ kinematics and forces
    def kinematics(self, model, x, xd=None, *, need_jacobian: bool = True) -> ContactKinematics:
        """δ, δ̇, p, v_t, n and J_p at the tree state (x, ẋ) (`contact.geometry.sphere_kinematics`)."""
        return sphere_kinematics(model, x, xd, self.link, self.xyz, self.radius, self.ground,
                                 need_jacobian=need_jacobian, point_depth=self.normal_law.point_depth)

    def _normal_on(self, kin: ContactKinematics) -> bool:
        if self.normal_law.acts_outside_contact:
            return True
        return self._state.active if self._state is not None else kin.delta > 0.0

    def forces(self, kin: ContactKinematics) -> tuple[float, np.ndarray, float]:
        """(F_N [N], F_T world vector [N], F_N(δ, 0) [N]) at this state (given the discrete state): the contact
        kernel `kernels._contact_forces_py` with this element's law objects bound (`contact_forces_by_laws`)."""
        from biobullet.contact import kernels
        laws = (self.normal_law, self.friction_law)
        cached = self.__dict__.get("_forces_step")
        if cached is None or cached[0] != laws:
            cached = self._forces_step = (laws, kernels.contact_forces_by_laws(*laws))
        step = cached[1]
        row = np.zeros((1, kernels.STATE_WIDTH))
        if self._state is not None:
            kernels.discrete_rows((self._state,), row)
        else:   # outside a run: active iff δ > 0, δ̇⁻ = δ̇ (the module docstring)
            row[0, kernels.ACTIVE], row[0, kernels.IMPACT] = float(kin.delta > 0.0), max(kin.delta_dot, 0.0)
        slip = np.asarray(kin.slip, dtype=float)
        _, fn, elastic, ft0, ft1, ft2 = step(0, None, 0, None, self.normal_law.acts_outside_contact,
                                             self.normal_law.needs_impact_velocity, self.friction_law.discontinuous,
                                             row[0], kin.delta, kin.delta_dot, slip, float(np.linalg.norm(slip)))
        return fn, np.array([ft0, ft1, ft2]), elastic

    def _evaluate(self, model, x, xd):
        """(kinematics, forces) at (x, ẋ), cached for the last state (the engine asks for τ, then power)."""
        key = (np.asarray(x, dtype=float).tobytes(), np.asarray(xd, dtype=float).tobytes())
        cached = self.__dict__.get("_last")
        if cached is not None and cached[0] == key and cached[1] is self._state_key():
            return cached[2], cached[3]
        kin = self.kinematics(model, x, xd)
        result = self.forces(kin)
        self._last = (key, self._state_key(), kin, result)
        return kin, result

    def _state_key(self):
        # discrete state changes only in `_sync`, which clears the cache; the state object identifies the run
        return self._state

    def generalized_force(self, model, x, xd, t, placements=None) -> np.ndarray:
        # (placements: the force-element interface's tree placements; the contact kernel places its own chain)
        kin, (fn, ft, _) = self._evaluate(model, x, xd)
        if fn == 0.0 and not np.any(ft):
            return np.zeros(model.n_tangent)
        return kin.generalized(fn * kin.normal + ft)

    def potential_energy(self, model, x) -> float:
        return law_potential(self.normal_law, self.kinematics(model, x, need_jacobian=False).delta)

    def potential_energy_batch(self, model, positions: np.ndarray) -> np.ndarray:
        """V [J] at every row of `positions` (tree configurations): δ of all samples in one compiled call when the
        compiled observer is on (`use_compiled_observer`), else `potential_energy` per sample."""
        sampler = self.__dict__.get("_sampler")
        if sampler is None:
            return np.array([self.potential_energy(model, x) for x in positions], dtype=float)
        positions = np.asarray(positions, dtype=float)
        deltas = sampler(self._state, positions, np.zeros((len(positions), model.n_tangent)))[:, 3]
        return np.array([law_potential(self.normal_law, d) for d in deltas.tolist()], dtype=float)

    def power_split(self, kin: ContactKinematics, forces=None) -> tuple[float, float]:
        """(normal dissipation (F_N − F_N(δ, 0)) δ̇, friction dissipation −F_T·v_t), W, both ≥ 0."""
        fn, ft, elastic = self.forces(kin) if forces is None else forces
        if not self._normal_on(kin):
            return 0.0, 0.0
        return (fn - elastic) * kin.delta_dot, -float(ft @ kin.slip)

    def dissipated_power(self, model, x, xd) -> float:
        kin, forces = self._evaluate(model, x, xd)
        return float(sum(self.power_split(kin, forces)))

    # ------------------------------------------------------------------ events
    def events(self, model) -> list[Event]:
        """touch (δ = 0, both ways), release (the unclipped force reaching zero) and switched friction's slip stop and
        start. The touch on the way out and the release are kinks of the right-hand side (`Event.kink`): the law acts
        on the step that crosses them and stops there by the state alone (δ ≤ 0, or the force clipped at zero). The
        onset is not: an inactive contact's force is zero on the crossing step's stages (the action switches it on),
        and slip stop and start switch friction by their action too. (A law acting outside contact: `_leaving`.)"""
        law = self.normal_law
        out = [Event(f"{self.name}:touch", self._g_touch(model), 0.0, restart=True, action=self._sync,
                     kink=self._leaving)]
        if law.release_function(1.0, 1.0, 1.0) is not None and not law.adhesion and not law.acts_outside_contact:
            out.append(Event(f"{self.name}:release", self._g_release(model), -1.0, restart=True,
                             action=self._sync, kink=True))
        if self.friction_law.discontinuous:
            out.append(Event(f"{self.name}:slip_stop", self._g_slip_stop(model), -1.0, restart=True,
                             action=self._sync))
            out.append(Event(f"{self.name}:slip_start", self._g_slip_start(model), 1.0, restart=True,
                             action=self._sync))
        return out

    def _leaving(self) -> bool:
        """Whether the right-hand side bends where a touch event is located now (`Event.kink`): the way out of an
        active contact, whose law stops at δ = 0; and both ways for a law acting outside contact, which is smooth
        but rises over 1/C at δ = 0 (kelvin_voigt_smooth, C = 1e4 /m: steep on a step's scale; cut from the crossing
        step's interpolant, the dissipated energy was 10 rtol·m g h off with RK45)."""
        return self._state is not None and (self._state.active or self.normal_law.acts_outside_contact)

    def _event_kinematics(self, model, x, xd) -> tuple[float, float, np.ndarray]:
        """(δ [m], δ̇ [m/s], slip v_t (3) [m/s]) for the event functions (no Jacobian)."""
        kin = self.kinematics(model, x, xd, need_jacobian=False)
        return kin.delta, kin.delta_dot, kin.slip

    def _g_touch(self, model):
        def g(t, x, xd):
            delta = self._event_kinematics(model, x, None)[0]
            if delta != 0.0:
                return delta
            # exactly on the plane: the side of the discrete state, so that leaving δ = 0 is a sign change (g = 0
            # at a segment's start is no crossing for the stepper: a ball placed touching at rest fell through)
            return _TOUCHING if self._state is not None and self._state.active else -_TOUCHING
        return g

    def _g_release(self, model):
        def g(t, x, xd):
            if self._state is None or not self._state.active:
                return 1.0
            delta, delta_dot, _ = self._event_kinematics(model, x, xd)
            impact = self._state.impact_velocity if self.normal_law.needs_impact_velocity else None
            return float(self.normal_law.release_function(delta, delta_dot, impact))
        return g

    def _g_slip_stop(self, model):
        def g(t, x, xd):
            st = self._state
            if st is None or not st.active or st.resting or st.slip_direction is None:
                return 1.0
            return float(self._event_kinematics(model, x, xd)[2] @ st.slip_direction)
        return g

    def _g_slip_start(self, model):
        def g(t, x, xd):
            st = self._state
            if st is None or not st.active or not st.resting:
                return -1.0
            return float(np.linalg.norm(self._event_kinematics(model, x, xd)[2])) - REST_SPEED
        return g

    def _sync(self, t: float, x: np.ndarray, xd: np.ndarray) -> None:
        """Event action: bring the discrete state in line with the (located) event state."""
        st = self._state
        if st is None:
            return
        self._last = None
        kin = self.kinematics(self._model, x, xd)
        resting, active = st.resting, st.active
        sync_state(st, self.friction_law.discontinuous, t, kin.delta, kin.delta_dot, kin.slip)
        if self.friction_law.discontinuous:
            self._watch_chatter(t, resting, active)

    def _watch_chatter(self, t: float, resting: bool, active: bool) -> None:
        """SolverError when switched friction chatters steadily: CHATTER_CYCLES cycles in a row of a slide shorter
        than CHATTER_SLIDE and a rest as long as the first rest of the row to CHATTER_SPREAD. Without stiction a
        contact held by a steady tangential load below μ F_N (a block on an incline below the friction angle)
        slides off at REST_SPEED and friction stops it at once, every 1.5e-6 s there: a restart each, until the
        step budget ran out (with advice to choose an implicit method, which chatters alike). The rest, REST_SPEED
        over the load's acceleration, stays the same while the load does; a contact that settles (a box's four
        corners after a braking stop: ~130 cycles each) rests longer and longer and runs on."""
        st = self._state
        count, first_rest, rest_start, slide_start = self._chatter
        if st.active != active:
            count, first_rest, rest_start, slide_start = 0, None, None, None
        elif resting and not st.resting:   # rest → slide: one rest measured
            if rest_start is not None:
                rest = t - rest_start
                if first_rest is not None and abs(rest - first_rest) <= CHATTER_SPREAD * first_rest:
                    count += 1
                else:
                    count, first_rest = 0, rest
            slide_start = t
        elif st.resting and not resting and slide_start is not None:   # slide → rest
            if t - slide_start >= CHATTER_SLIDE:
                count, first_rest = 0, None
            rest_start = t
            if count >= CHATTER_CYCLES:
                raise SolverError(
                    f"{self.source.file}: {self.source.element}: friction_law '{self.friction_law.law_name}' has no "
                    "stiction: the contact is held at rest by a steady tangential load below μ F_N and chatters "
                    f"between rest and slip ({count} cycles in a row of slides of {t - slide_start:.3g} s and rests "
                    f"of {first_rest:.3g} s, at t = {t:.9g} s); choose a regularized law (friction_law="
                    "\"regularized\", \"stribeck\" or \"opensim\"), which holds the contact by creeping at a slip "
                    "speed set by its v0")
        self._chatter = (count, first_rest, rest_start, slide_start)

    # ------------------------------------------------------------------ step observer (interval log)
    def use_compiled_observer(self, model) -> bool:
        """Evaluate the step observer's samples by the compiled contact kernels (`kernels.ContactSampler`, the
        same laws as `forces`); the engine's compiled right-hand sides switch it on for their run copies. False
        (the Python path stays) when a law has no twin or numba is off."""
        from biobullet.contact.kernels import ContactSampler
        self._sampler = ContactSampler.for_contact(model, self) if self._state is not None else None
        return self._sampler is not None

    def _samples(self, model, times, state_at) -> np.ndarray:
        """(n, 4) rows (F_N [N], normal and friction dissipated power [W], δ [m]) at the given times of a step,
        given the discrete state: the compiled sampler if switched on, else `forces` and `power_split`."""
        sampler = self.__dict__.get("_sampler")
        many = getattr(state_at, "many", None)
        if many is not None and len(times) > 1:   # all the step's times in one pass (`discrete.step_observer`)
            positions, velocities = many(times)
            if sampler is not None:
                return sampler(self._state, positions, velocities)
            states = list(zip(positions, velocities))
        else:
            states = [state_at(s) for s in times]
        if sampler is not None:
            return sampler(self._state, np.array([x for x, _ in states]), np.array([xd for _, xd in states]))
        out = np.empty((len(states), 4))
        for row, (x, xd) in zip(out, states):
            kin = self.kinematics(model, x, xd)
            forces = self.forces(kin)
            row[0] = forces[0]
            row[1], row[2] = self.power_split(kin, forces)
            row[3] = kin.delta
        return out

    def observe_step(self, model, t_old: float, t_new: float, state_at) -> None:
        st = self._state
        interval = st.current if st is not None else None
        if interval is None or not t_new > t_old:
            return
        h = t_new - t_old
        nodes, weights = _GAUSS
        gauss = self._samples(model, t_old + 0.5 * h * (nodes + 1.0), state_at)
        for w, row in zip(0.5 * h * weights, gauss):
            interval.impulse += w * row[0]
            interval.dissipated_normal += w * row[1]
            interval.dissipated_friction += w * row[2]

        grid = np.linspace(t_old, t_new, _PEAK_GRID)
        samples = self._samples(model, grid, state_at)
        deepest = self._step_maximum(model, grid, samples, 3, interval.max_penetration, state_at)
        if deepest is not None:
            interval.max_penetration = deepest[1]
        peak = self._step_maximum(model, grid, samples, 0, interval.peak_force, state_at)
        if peak is not None:
            interval.peak_force_time, interval.peak_force = peak

    def _step_maximum(self, model, grid, samples, column: int, known: float, state_at) -> tuple[float, float] | None:
        """(t [s], value) of the largest `column` of the step's samples (0: F_N [N], 3: δ [m]) above `known`, refined
        between the neighbours of the largest grid sample, or None. A largest last sample is refined in the last
        sub-interval unless the parabola through the last three samples still rises at the end, and in the next
        step's first sub-interval too, which holds a maximum just past this step's end (refining interior samples
        only missed both: a Hertz drop's peak force 1.7e-4 low)."""
        values = samples[:, column]
        i = int(np.argmax(values))
        last = len(grid) - 1
        pending = self._unrefined.pop(column, False)
        if values[i] < known and not (pending and i == 0):
            return None
        best_t, best = float(grid[i]), float(values[i])
        bounds = (grid[max(i - 1, 0)], grid[i + 1]) if i < last else None
        if i == last:
            self._unrefined[column] = True
            curvature = values[-3] - 2.0 * values[-2] + values[-1]
            if curvature < 0.0 and values[-3] - values[-1] > 2.0 * curvature:   # the vertex before the end
                bounds = (grid[-2], grid[-1])
        if bounds is not None:
            res = minimize_scalar(lambda s: -float(self._samples(model, (s,), state_at)[0, column]), bounds=bounds,
                                  method="bounded", options={"xatol": 1e-14 * max(1.0, abs(grid[-1]))})
            if -res.fun > best:
                best_t, best = float(res.x), float(-res.fun)
        return (best_t, best) if best > known else None


def _all_law_attributes() -> set[str]:
    from biobullet.contact.registry import FRICTION_LAWS, NORMAL_LAWS
    return {key for registry in (NORMAL_LAWS, FRICTION_LAWS) for cls in registry.classes()
            for key in cls.attributes} | {"exponent"}


_CONTACTS = "contact.elements"   # key of the built contact elements in `Model.derived`


def contact_elements(model) -> tuple[Contact, ...]:
    """The `<contact>` elements of `model` (file order), built once per Model; names must be distinct."""
    return model.derive(_CONTACTS, lambda: _build_contacts(model))


def _build_contacts(model) -> tuple[Contact, ...]:
    built: list[Contact] = []
    names: set[str] = set()   # (a set: thousands of contacts are checked in linear time)
    for element in model.description.elements_of("contact"):
        contact = Contact.from_description(model, element)
        if contact.name in names:
            if "name" in element.attributes:
                raise element.source.error("name", f"contact name {contact.name!r} is used twice",
                                           "distinct names")
            count = 2
            while f"{contact.name}_{count}" in names:
                count += 1
            set_parameter(contact, "name", f"{contact.name}_{count}")   # (before anything packed it)
        names.add(contact.name)
        built.append(contact)
    return tuple(built)


def contact_intervals(trajectory, name: str | None = None) -> list[dict]:
    """The contact-interval log of a trajectory from `simulate` (all contacts, or the one called `name`); each
    entry: start, end, duration, impact_velocity, rebound_velocity, restitution, peak_force, peak_force_time,
    impulse, max_penetration, dissipated_normal, dissipated_friction, initial, contact."""
    logs = trajectory.meta.get("discrete", {})
    out = []
    for key, log in logs.items():
        if name is not None and key != name:
            continue
        for interval in log.get("intervals", []):
            out.append({**interval, "contact": key})
    return sorted(out, key=lambda item: item["start"])
