"""A compliant-tendon DeGrooteFregly2016 fiber at and beyond its shortest length, against OpenSim 4.6 and the closed
form (docs/muscles.md, "Hill models": the shortest fiber).

De Groote et al. 2016 write the fiber from the tendon force (the state): l_T = l_s f_T⁻¹(F̃_T), the fiber's
projection x = l − l_T, l_M = √(x² + h²), cos α = x / l_M, the fiber velocity from f_V⁻¹((F̃_T / cos α − f_PE) /
(a f_L)). OpenSim 4.6 evaluates these as written, with no clamp (its 0.2 and 1.8 l₀ are bounds for Moco, not
enforced): where x > 0 — fibers below 0.2 l₀ included, outside the curves' domain — ours is the same ODE (checked
here to 1e-9). Where the path is shorter than the tendon (x < 0) OpenSim's fiber is inverted (cos α < 0, a
fiber of length |x| pointing back along the tendon, which must push to hold a pulling tendon) and "lengthens" as the
path shortens; ours holds the fiber at its shortest (x = 0, its shortening velocity zero) and the tendon takes the
whole path: T = F₀ f_T(l / l_s) (no pennation), checked against the closed form with the paper's and OpenSim's
constants (c₁ = c₃ = 0.2, c₂ = 1, k_T = ln 6 / ε₀).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from muscle_models import opensim_pinned_arm
from opensim_oracle import import_opensim

osim = import_opensim()

import biobullet  # noqa: E402
import biobullet.muscles as muscles  # noqa: E402
from biobullet.muscles.dynamics import (COS_PENNATION, FIBER_LENGTH, FIBER_VELOCITY, TENDON_FORCE,  # noqa: E402
                                        evaluate_rates, pack_muscles)

F_MAX, L_OPT, V_MAX, STRAIN = 300.0, 0.1, 10.0, 0.049
K_T = math.log(6.0) / STRAIN   # De Groote 2016's tendon: f_T = 0.2 e^{k_T (l̃_T − 1)} − 0.2, f_T(1 + ε₀) = 1


def _closed_tendon_force(normalized_length: float, strain: float = STRAIN) -> float:
    """f_T(l̃_T) of De Groote et al. 2016 with OpenSim's c₃ = 0.2 (units of F₀), tendon strain ε₀ at F₀."""
    return 0.2 * math.exp(math.log(6.0) / strain * (normalized_length - 1.0)) - 0.2


def _write(tmp_path, pennation: float, slack: float, cls: str = "DeGrooteFregly2016Muscle",
           damping: float | None = None) -> str:
    """A pin-jointed arm pulled by one compliant muscle `m` of class `cls` from the ground (written by OpenSim 4.6;
    DeGroote's tendon strain at F₀ set to STRAIN)."""
    model, arm = opensim_pinned_arm(osim)
    muscle = getattr(osim, cls)()
    muscle.setName("m")
    muscle.set_max_isometric_force(F_MAX)
    muscle.set_optimal_fiber_length(L_OPT)
    muscle.set_max_contraction_velocity(V_MAX)
    muscle.set_tendon_slack_length(slack)
    muscle.set_pennation_angle_at_optimal(pennation)
    if cls == "DeGrooteFregly2016Muscle":
        muscle.set_tendon_strain_at_one_norm_force(STRAIN)
    if damping is not None:
        muscle.set_fiber_damping(damping)
    muscle.addNewPathPoint("origin", model.getGround(), osim.Vec3(0.05, 0.1, 0))
    muscle.addNewPathPoint("insertion", arm, osim.Vec3(0.03, -0.2, 0))
    model.addForce(muscle)
    model.finalizeConnections()
    path = str(tmp_path / f"{cls}_{damping}_{pennation}_{slack:.12f}.osim")
    model.printToXML(path)
    return path


PATH_LENGTH = math.hypot(0.02, 0.3)   # the path at q = 0 (m)


class _Both:
    """Ours and OpenSim's muscle `m` of `path` at q = 0 and joint speed `speed` (rad/s)."""

    def __init__(self, path: str, speed: float) -> None:
        self.model = biobullet.load_model(path)
        self.rows = pack_muscles(self.model)
        self.reference = osim.Model(path)
        self.state = self.reference.initSystem()
        self.muscle = osim.DeGrooteFregly2016Muscle.safeDownCast(self.reference.getMuscles().get(0))
        self.reference.getCoordinateSet().get(0).setValue(self.state, 0.0)
        self.reference.getCoordinateSet().get(0).setSpeedValue(self.state, speed)
        self.reference.realizeVelocity(self.state)
        self.length = self.muscle.getLength(self.state)
        self.speed = self.muscle.getLengtheningSpeed(self.state)

    def theirs(self, activation: float, normalized_tendon_force: float) -> None:
        self.muscle.setStateVariableValue(self.state, "activation", activation)
        self.muscle.setStateVariableValue(self.state, "normalized_tendon_force", normalized_tendon_force)
        self.reference.realizeAcceleration(self.state)

    def ours(self, activation: float, fiber_length: float) -> np.ndarray:
        self.rows.excitation[:] = activation
        evaluate_rates(self.model, self.rows, np.array([self.length]), np.array([self.speed]),
                       np.array([activation, fiber_length]))
        return self.rows.outputs[0].copy()


@pytest.mark.parametrize("pennation", [0.0, 0.3])
@pytest.mark.parametrize("projection", [0.05, 0.1, 0.15])
@pytest.mark.parametrize("speed", [0.0, -2.0, 2.0])
def test_fiber_below_the_curves_domain_follows_opensims_state_derivative(pennation, projection, speed, tmp_path):
    """x = 0.05–0.15 l₀ (fibers 0.05–0.33 l₀, below 0.2 l₀ without pennation), the tendon force set so that the
    fiber works at f_V = 0.8: our fiber length, tendon force and fiber velocity equal OpenSim's, and our tendon
    force rate f_T'(l̃_T) (l̇ − l̇_M / cos α) / l_s equals OpenSim's `normalized_tendon_force` derivative."""
    activation = 0.6
    x = projection * L_OPT
    fiber = math.hypot(x, L_OPT * math.sin(pennation))
    probe = osim.DeGrooteFregly2016Muscle()
    force = (activation * probe.calcActiveForceLengthMultiplier(fiber / L_OPT) * 0.8
             + probe.calcPassiveForceMultiplier(fiber / L_OPT)) * x / fiber
    slack = (PATH_LENGTH - x) / (1.0 + math.log((force + 0.2) / 0.2) / K_T)
    both = _Both(_write(tmp_path, pennation, slack), speed)
    both.theirs(activation, force)
    out = both.ours(activation, fiber)
    muscle, state = both.muscle, both.state
    assert abs(muscle.getFiberLengthAlongTendon(state) - x) < 1e-12
    assert abs(out[FIBER_LENGTH] - muscle.getFiberLength(state)) < 1e-12
    assert abs(out[TENDON_FORCE] - muscle.getTendonForce(state)) < 1e-9 * F_MAX
    velocity = muscle.getFiberVelocity(state)
    assert abs(out[FIBER_VELOCITY] - velocity) < 1e-9 * L_OPT * V_MAX
    stiffness = K_T * (force + 0.2)   # f_T'(l̃_T) = k_T (f_T + 0.2)
    rate = stiffness * (both.speed - out[FIBER_VELOCITY] / out[COS_PENNATION]) / slack
    theirs = muscle.getStateVariableDerivativeValue(state, "normalized_tendon_force")
    assert abs(rate - theirs) < 1e-9 * max(1.0, abs(theirs)), (rate, theirs)


@pytest.mark.parametrize("speed", [0.0, -2.0, 2.0])
def test_path_shorter_than_the_tendon_holds_the_fiber_at_zero(speed, tmp_path):
    """No pennation, the path 1 % shorter than the tendon's slack length: ours holds the fiber at length 0 with zero
    velocity and the tendon force is F₀ f_T(l / l_s) (closed form, compressive); OpenSim's fiber at the same path
    and a state with x = −0.01 l₀ is inverted (length |x|, cos α = −1). With the path 1 % longer than l_s the
    tendon pulls and our fiber leaves its shortest length (positive velocity)."""
    activation = 0.6
    both = _Both(_write(tmp_path, 0.0, PATH_LENGTH / 0.99), speed)
    out = both.ours(activation, 0.0)
    slack = PATH_LENGTH / 0.99
    assert out[FIBER_LENGTH] == 0.0 and out[FIBER_VELOCITY] == 0.0
    assert abs(out[TENDON_FORCE] - F_MAX * _closed_tendon_force(both.length / slack)) < 1e-12 * F_MAX
    assert out[TENDON_FORCE] < 0.0
    tendon = both.length + 0.01 * L_OPT
    both.theirs(activation, _closed_tendon_force(tendon / slack))
    assert abs(both.muscle.getFiberLengthAlongTendon(both.state) + 0.01 * L_OPT) < 1e-12
    assert abs(both.muscle.getFiberLength(both.state) - 0.01 * L_OPT) < 1e-12
    assert both.muscle.getCosPennationAngle(both.state) == -1.0

    pulled = _Both(_write(tmp_path, 0.0, PATH_LENGTH / 1.01), speed)
    out = pulled.ours(activation, 0.0)
    assert out[FIBER_LENGTH] == 0.0 and out[FIBER_VELOCITY] > 0.0
    assert abs(out[TENDON_FORCE] - F_MAX * _closed_tendon_force(pulled.length * 1.01 / PATH_LENGTH)) < 1e-12 * F_MAX


def test_run_through_the_shortest_fiber_follows_the_tendon(tmp_path):
    """The run muscprobe found (plain seed 5 of test_unseen50_muscle_class.py's generator, muscle m0: DeGroote,
    compliant, no pennation): its fiber's projection reaches 0 between 0.038 and 0.039 s (OpenSim 4.6 agrees to
    1e-6 until then, fibers down to 0.03 l₀). From there ours holds the fiber at 0 and the tendon force is
    F₀ f_T(l / l_s) at every output time, to 1e-9 F₀ (closed form)."""
    from test_unseen50_muscle_class import load_quietly, random_model
    path = str(tmp_path / "plain5.osim")
    random_model(5, path, plain=True)
    model, _ = load_quietly(path)
    reference = osim.Model(path)
    m0 = reference.getMuscles().get("m0")
    assert m0.getConcreteClassName() == "DeGrooteFregly2016Muscle" and m0.getPennationAngleAtOptimalFiberLength() == 0
    m0 = osim.DeGrooteFregly2016Muscle.safeDownCast(m0)
    names = muscles.names(model)
    rng = np.random.default_rng(5 + 20_000)   # the class's run inputs (run_differences)
    excitation = {name: float(u) for name, u in zip(names, rng.uniform(0.0, 1.0, len(names)))}
    activation = {name: float(a) for name, a in zip(names, rng.uniform(0.05, 1.0, len(names)))}
    q0 = np.array([reference.getCoordinateSet().get(c).getDefaultValue() for c in model.coordinate_names])
    run = biobullet.simulate(model, 0.05, initial=(q0, np.zeros(model.nv)), excitations=excitation,
                             activations=activation, rtol=1e-10, atol=1e-12, t_eval=np.linspace(0.04, 0.05, 11),
                             progress=False)
    k = names.index("m0")
    held = run.muscles["fiber_length"][:, k]
    slack, strain = m0.getTendonSlackLength(), m0.get_tendon_strain_at_one_norm_force()
    expected = m0.getMaxIsometricForce() * np.array([_closed_tendon_force(length / slack, strain)
                                                     for length in run.muscles["length"][:, k]])
    assert np.all(held == 0.0), held
    assert np.abs(run.muscles["tendon_force"][:, k] - expected).max() < 1e-9 * m0.getMaxIsometricForce()


@pytest.mark.parametrize("cls, damping", [("Millard2012EquilibriumMuscle", 0.1),
                                          ("Millard2012EquilibriumMuscle", 0.0), ("Thelen2003Muscle", None)])
@pytest.mark.parametrize("pennation", [0.0, 0.3])
@pytest.mark.parametrize("strain", [0.002, 0.02])
def test_millard_and_thelen_fibers_below_their_shortest_are_clamped_as_opensims(cls, damping, pennation, strain,
                                                                                 tmp_path):
    """Fibers set at 0, 0.1 and 0.25 l₀ (below Millard's 0.4441 l₀ and below Thelen's h / sin α_max with pennation;
    Thelen's shortest is 0 without), the tendon strained by `strain` at the clamped fiber (0.2 %: the fiber is
    held, its shortening velocity zero; 2 %: it leaves the clamp), activation and excitation 0.9: our clamped fiber
    length, fiber velocity (the fiber state's rate) and tendon force equal OpenSim 4.6's (1e-12 m; 1e-9 l₀ v_max,
    OpenSim's damped Millard fiber velocity being a Newton solve; 1e-9 F₀)."""
    probe = osim.Model(_write(tmp_path, pennation, 0.3, cls, damping))
    state = probe.initSystem()
    muscle = getattr(osim, cls).safeDownCast(probe.getMuscles().get(0))
    muscle.setActivation(state, 0.9)
    muscle.setFiberLength(state, 0.0)
    probe.realizePosition(state)
    along = muscle.getFiberLengthAlongTendon(state)   # at the clamp: x_min = l_M,min cos α
    slack = (PATH_LENGTH - along) / (1.0 + strain)
    path = _write(tmp_path, pennation, slack, cls, damping)
    model = biobullet.load_model(path)
    rows = pack_muscles(model)
    reference = osim.Model(path)
    state = reference.initSystem()
    muscle = getattr(osim, cls).safeDownCast(reference.getMuscles().get(0))
    for fiber in (0.0, 0.1 * L_OPT, 0.25 * L_OPT):
        muscle.setActivation(state, 0.9)
        muscle.setFiberLength(state, fiber)
        reference.realizeVelocity(state)
        controls = reference.updControls(state)
        controls.set(0, 0.9)
        reference.setControls(state, controls)
        reference.realizeAcceleration(state)
        rows.excitation[:] = 0.9
        evaluate_rates(model, rows, np.array([muscle.getLength(state)]),
                       np.array([muscle.getLengtheningSpeed(state)]), np.array([0.9, fiber]))
        out = rows.outputs[0]
        assert abs(out[FIBER_LENGTH] - muscle.getFiberLength(state)) < 1e-12, fiber
        assert abs(out[TENDON_FORCE] - muscle.getTendonForce(state)) < 1e-9 * F_MAX, fiber
        theirs = muscle.getStateVariableDerivativeValue(state, "fiber_length")
        assert abs(out[FIBER_VELOCITY] - theirs) < 1e-9 * L_OPT * V_MAX, (fiber, out[FIBER_VELOCITY], theirs)
        assert abs(rows.rate[1] - theirs) < 1e-9 * L_OPT * V_MAX
        assert fiber > 0.0 or out[TENDON_FORCE] > 0.0   # the tendon loaded at the clamp
