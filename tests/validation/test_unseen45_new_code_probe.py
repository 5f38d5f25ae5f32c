"""An independent probe of the code that landed in the nineteenth session (5bea216..1fcc2d0) on inputs its authors
did not try: the public calls' kept state and the tree kernel's placements, the multipliers' KKT path for singular
trees, validate's scales, events at a cut, argument checks. Each defect found is a test here that failed on main,
against an independent oracle (Pinocchio, a closed form).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.dynamics.multipliers import project_velocities

pin = pytest.importorskip("pinocchio")

ROOT = Path(__file__).parents[2]
EPS = np.finfo(float).eps


# ------------------------------------------------ multipliers: a held massless link beside an unheld combination
#: inserted before each anchor of the bundled four-bar knee: a massless 'cart' above the thigh on the slider 'slide'
#: along x, and the hinge 'spin' on the shank through a 0.3 kg point mass
_INSERTED = {
    '<link name="thigh">': '<link name="cart"/><joint name="slide" type="prismatic"><parent link="cart"/><child '
                           'link="thigh"/><axis xyz="1 0 0"/><limit lower="-10" upper="10" effort="0" velocity="10"/>'
                           '</joint>',
    '<biobullet version="1">': '<link name="probe"><inertial><origin xyz="0.05 0 0"/><mass value="0.3"/><inertia '
                               'ixx="0" iyy="0" izz="0" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="spin" '
                               'type="continuous"><parent link="shank"/><child link="probe"/><origin xyz="0.01 0 -0.3" '
                               'rpy="0.2 0.1 0.3"/><axis xyz="1 0 0"/></joint>'}


def _cart_fourbar(tmp_path, slide_prescribed: bool) -> Path:
    """The bundled four-bar knee hung from a massless 'cart' by a slider 'slide' along x (on a floating base, base x
    minus slide moves no mass: each moves the knee, together nothing), plus a hinge 'spin' on the shank through a
    0.3 kg point mass (a direction that moves no mass at all) driven by the joint function spin = 0.7 t (its row
    holds it). slide_prescribed: slide = 0.3 t (a row holds base x minus slide too), else an independent
    coordinate (nothing holds it)."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text(encoding="utf-8")
    for anchor, inserted in _INSERTED.items():
        text = text.replace(anchor, inserted + anchor, 1)
    rates = {"spin": 0.7, **({"slide": 0.3} if slide_prescribed else {})}
    functions = "".join(f'<joint_function joint="{joint}" type="expression" expression="r*t" parameters="r={rate!r}"/>'
                        for joint, rate in rates.items())
    text = text.replace('<biobullet version="1">', '<biobullet version="1">' + functions, 1)
    if not slide_prescribed:
        text = text.replace('<coordinates names="knee_A"/>', '<coordinates names="knee_A slide"/>')
    path = tmp_path / f"cart_fourbar_{len(rates)}.urdf"
    path.write_text(text, encoding="utf-8")
    return path


def _states(model, seed: int, count: int):
    """`count` random (q, v, τ): the neutral configuration moved 0.3 (rad, m) at random, unit rates and forces."""
    rng = np.random.default_rng(seed)
    return [(model.normalize_configuration(model.neutral_configuration() + 0.3 * rng.normal(size=model.nq)),
             rng.normal(size=model.nv), rng.normal(size=model.nv)) for _ in range(count)]


def test_multipliers_refuse_an_unheld_combination_beside_a_held_massless_link(tmp_path):
    """Pinocchio's CRBA of the tree: spin's diagonal entry is round-off (the point mass on its axis) and M d = 0
    for d = base_vx − slide (the cart has no mass) — at every base orientation, the slide being along the base's x.
    The loop's rows read the knee's links only and spin's function row spin alone, so Φ_x d = 0: the KKT matrix is
    singular along (d, 0) and ẍ + s·d solves it for every s — no acceleration is defined. `multipliers` must refuse
    naming base_vx and slide, as it does without the spin hinge (test_unseen41). On main it saw the held massless
    spin, solved the whole KKT matrix and returned a finite, meaningless q̈ (base_vx = slide = −2.45 m/s², the
    minimum-norm split, at the first state here)."""
    path = _cart_fourbar(tmp_path, slide_prescribed=False)
    pin_model = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
    mass = pin.crba(pin_model, pin_model.createData(), pin.neutral(pin_model))
    mass = np.triu(mass) + np.triu(mass, 1).T
    spin = pin_model.joints[pin_model.getJointId("spin")].idx_v
    slide = pin_model.joints[pin_model.getJointId("slide")].idx_v
    direction = np.zeros(pin_model.nv)
    direction[0], direction[slide] = 1.0, -1.0   # the free flyer's first velocity: along the base's x
    assert abs(mass[spin, spin]) <= 1e-15
    assert np.max(np.abs(mass @ direction)) <= 10 * EPS * np.max(np.abs(mass))
    model = biobullet.load_model(path, floating_base=True)
    assert model.velocity_names[0] == "base_vx" and "slide" in model.velocity_names
    for q, v, tau in _states(model, 3, 3):
        with pytest.raises(biobullet.SolverError, match=r"singular along the motion.*'base_vx'.*'slide'.*no "
                                                        r"constraint row holds that motion"):
            model.forward_dynamics(q, v, tau, t=0.2, formulation="multipliers")
        x, xd, _, _ = model.joint_state(q, v, 0.2)
        with pytest.raises(biobullet.SolverError, match=r"'base_vx'.*'slide'.*no constraint row holds"):
            project_velocities(model, x, xd, 0.2)   # (the projections' rule: refused on main too)


def test_multipliers_solve_a_held_combination_beside_a_held_massless_link(tmp_path):
    """The same tree with slide = 0.3 t (its row holds base x minus slide): the KKT matrix is regular and
    `multipliers` equals `reduced_pinocchio` (Pinocchio's CRBA + RNEA projected by the loop's and the functions' G)
    to 10·cond(M_r)·ε, as in test_unseen41 — the refusal above is not extended to a model that is solvable."""
    model = biobullet.load_model(_cart_fourbar(tmp_path, slide_prescribed=True), floating_base=True)
    assert "slide" not in model.velocity_names
    for state in _states(model, 4, 3):
        oracle = model.forward_dynamics(*state, t=0.2, formulation="reduced_pinocchio")
        bound = 10.0 * EPS * np.linalg.cond(model.mass_matrix(state[0], t=0.2, formulation="reduced_pinocchio"))
        np.testing.assert_allclose(model.forward_dynamics(*state, t=0.2, formulation="multipliers"), oracle, rtol=0.0,
                                   atol=bound * max(1.0, np.max(np.abs(oracle))))


def test_unheld_direction_near_singular_posture_beside_a_held_massless_direction():
    """`constraints.solve.unheld_direction` on M = [[1, 1 − δ, 0], [1 − δ, 1, 0], [0, 0, 0]] (δ = 2⁻⁵⁰ ≈ 8.9e-16, exact
    in binary: the first two directions nearly parallel — the Cholesky pivot² 2δ − δ² is below 1e-14, declined —,
    (1, −1)/√2 moves δ kg·m² of mass, far above a 2e-18 floor; the third moves none) with a row holding the third:
    on ker Φ_x = span(e₀, e₁) M is [[1, 1 − δ], [1 − δ, 1]], eigenvalues δ and 2 − δ, positive definite — the KKT
    matrix is regular (closed form: its determinant is −δ(2 − δ) ≠ 0), a
    near-singular posture as in test_unseen41's `near` case, which returns None without the massless direction. On
    main the near-singular branch asked LAPACK to factorise M itself, which the held massless direction makes
    singular, and named (1, −1, 0)/√2 as an unheld motion — reached now that `multipliers` sends a model with a held
    massless link through it where the cheap test declines."""
    from biobullet.constraints.solve import unheld_direction
    delta = 2.0 ** -50
    near = np.array([[1.0, 1.0 - delta, 0.0], [1.0 - delta, 1.0, 0.0], [0.0, 0.0, 0.0]])
    held = np.array([[0.0, 0.0, 1.0]])
    assert unheld_direction(near[:2, :2], np.zeros((0, 2)), np.full(2, 1e-9)) is None   # (without the third)
    assert unheld_direction(near, held, np.full(3, 1e-9)) is None
    # an unheld third direction is still named
    direction = unheld_direction(near, np.zeros((0, 3)), np.full(3, 1e-9))
    assert direction is not None and abs(abs(direction[2]) - 1.0) <= 1e-12
