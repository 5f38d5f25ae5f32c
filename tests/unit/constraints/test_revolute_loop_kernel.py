"""The revolute `<loop>` type in the compiled loop rows (`constraints.loop_kernels._loop_rows_into_py`, kind 2) and
what it opens: the pipeline's loop stage (`constraints.newton_kernel`) and the compiled loop right-hand side
(`integrate.compiled_rhs.CompiledReducedRHS`) for models with a revolute loop, alone and mixed with a planar loop.

Checked against independent references: `RevoluteLoop.rows` (the per-loop numpy reference, through
`loops._per_loop_terms`) at 60 random states, the bias also against central differences of Φ_x ẋ and the Jacobian
against central differences of Φ; a whole passive run against energy conservation. Models: a random spatial chain (4 + 4 continuous joints, 3 DOF) closed by a revolute loop with a
skew hinge axis (tests/closed_chains.py), and the same chain with the four-bar knee of urdf/fourbar_knee.urdf
(a planar loop) on a second branch of the same root — one loop resolver holding a revolute and a planar loop."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.constraints import loop_kernels
from biobullet.constraints.loops import _per_loop_terms, vector_loops, tree_kinematics
from biobullet.core import jit
from closed_chains import closed_chain

ROOT = Path(__file__).resolve().parents[3]
compiled_only = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled (BIOBULLET_NUMBA=0): the compiled "
                                                           "loop kernels and right-hand side are off")
SEED = 2   # a chain whose passive motion from the zero pose (rates of `_initial`) stays regular for T_RUN
T_RUN = 0.6   # s (this chain reaches a singular configuration near t = 1 s)


def _knee_parts() -> tuple[str, str]:
    """(links and joints of urdf/fourbar_knee.urdf from the thigh on, its planar <loop> element)."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text()
    body = text[text.index('<link name="thigh">'):text.index("<biobullet")]
    body = re.sub(r"<visual>.*?</visual>", "", body, flags=re.DOTALL)
    return body, re.search(r"<loop [^>]*/>", text).group(0)


def revolute_chain(directory: Path):
    return closed_chain(directory, SEED, "revolute")


def mixed_loops(directory: Path):
    """The revolute chain plus the four-bar knee hanging from its root by a hip joint: loops (revolute, planar)
    in one resolver; independent joints: the chain's three, the hip and knee_A."""
    chain = closed_chain(directory, SEED, "revolute")
    text = Path(chain.file).read_text()
    body, loop = _knee_parts()
    hip = ('<joint name="hip" type="continuous"><parent link="root"/><child link="thigh"/>'
           '<origin xyz="0 0.6 0" rpy="0 0 0"/><axis xyz="0 1 0"/></joint>')
    text = text.replace("<biobullet", hip + body + "<biobullet", 1)
    text = text.replace("<coordinates names=\"", loop + "<coordinates names=\"hip knee_A ", 1)
    path = directory / "mixed_loops.urdf"
    path.write_text(text)
    return biobullet.load_model(path)


def _initial(model, positions):
    """(q0, v0): `positions` on the model's initial state, every independent joint moving (rad/s): the velocity
    product terms (b) take part from the start."""
    q0, v0 = model.initial_state(positions)
    return q0, np.linspace(1.0, -0.75, len(v0))


MODELS = {"revolute loop": (revolute_chain, {}), "revolute and planar loops": (mixed_loops, {"knee_A": 0.4})}


def _loops(model):
    (resolver,) = [r for r in model.coordinate_map.resolvers if type(r).__name__ == "LoopResolver"]
    return resolver, resolver.loops


def _random_state(model, rng):
    return rng.uniform(-np.pi, np.pi, model.n_config), rng.uniform(-3.0, 3.0, model.n_tangent)


def _kernel_rows(kernel_rows, model, vector, x, xd):
    # the kernels' writable arrays, as the library passes them (read-only views compile the kernel once more)
    return kernel_rows(vector.rows, 0, tree_kinematics(model, x, xd).kernel_arrays, True, True)


@pytest.mark.parametrize("name", list(MODELS))
def test_kernel_rows_equal_the_loop_types_rows(tmp_path, name):
    """Φ, Φ_x and b of the kernel equal `RevoluteLoop.rows` / `PlanarLoop.rows` to 1e-12 at 60 random states
    (random angles over the whole circle, rates ±3 rad/s): the same algebra, only the evaluation order differs."""
    rows = loop_kernels.loop_rows_run
    model = MODELS[name][0](tmp_path)
    _, loops = _loops(model)
    assert sorted(loop.type for loop in loops) == (["revolute"] if name == "revolute loop" else
                                                   ["planar", "revolute"])
    vector = vector_loops(model, loops)
    assert vector is not None and 2 in vector.rows.kinds
    rng = np.random.default_rng(5)
    for _ in range(60):
        x, xd = _random_state(model, rng)
        phi, jac, bias = _kernel_rows(rows, model, vector, x, xd)
        ref_phi, ref_jac, ref_bias = _per_loop_terms(model, loops, tree_kinematics(model, x, xd), True, True)
        np.testing.assert_allclose(phi, ref_phi, rtol=0, atol=1e-12)
        np.testing.assert_allclose(jac, ref_jac, rtol=0, atol=1e-12)
        # b grows with |ẋ|² (here up to ~40 m/s², 1/s²): round-off relative to its size
        np.testing.assert_allclose(bias, ref_bias, rtol=0, atol=1e-12 * max(1.0, np.abs(ref_bias).max()))


@pytest.mark.parametrize("name", list(MODELS))
def test_bias_and_jacobian_match_finite_differences(tmp_path, name):
    """b = Φ̇_x ẋ equals d/ds [Φ_x(x + s ẋ) ẋ] and Φ_x equals ∂Φ/∂x, both by central differences (h = 1e-5:
    truncation ~h²·|third derivative| ≈ 1e-9 at these rates), through `loop_terms` (the compiled kernel where
    numba is on, else the per-loop rows)."""
    from biobullet.constraints.loops import loop_terms
    model = MODELS[name][0](tmp_path)
    _, loops = _loops(model)
    rng = np.random.default_rng(9)
    h = 1e-5
    for _ in range(10):
        x, xd = _random_state(model, rng)
        _, jac, bias = loop_terms(model, loops, x, xd)
        fd = (loop_terms(model, loops, x + h * xd)[1] @ xd - loop_terms(model, loops, x - h * xd)[1] @ xd) / (2 * h)
        np.testing.assert_allclose(bias, fd, rtol=0, atol=1e-7 * max(1.0, np.abs(fd).max()))
        fd_jac = np.column_stack([(loop_terms(model, loops, x + h * e, jacobian=False)[0]
                                   - loop_terms(model, loops, x - h * e, jacobian=False)[0]) / (2 * h)
                                  for e in np.eye(model.n_tangent)])
        np.testing.assert_allclose(jac, fd_jac, rtol=0, atol=1e-8)


@pytest.mark.parametrize("name", list(MODELS))
def test_passive_run_conserves_energy(tmp_path, name):
    """No damping, no actuation: T + V_gravity is constant; DOP853 at rtol 1e-10 keeps it to the integration
    tolerance on the compiled path (an independent check of the revolute rows' G and γ: a wrong bias term drifts
    it), which serves the whole run. With numba off: the generic path alone."""
    build, initial = MODELS[name]
    model = build(tmp_path)
    kw = {"rtol": 1e-10, "atol": 1e-12, "initial": _initial(model, initial), "progress": False,
          "t_eval": np.linspace(0, T_RUN, 101)}
    fast = biobullet.simulate(model, T_RUN, **kw)
    assert fast.meta["status"] == "finished"
    energy, kinetic = fast.total_energy(), fast.energy["kinetic"]
    assert np.ptp(kinetic) > 5.0   # energy moves between T and V (≈ 11 J of 12 J): something to conserve
    # rtol 1e-10 over T_RUN: the drift is the integration error (measured 1.3e-9 J and 8e-10 J, both paths)
    scale = max(abs(energy[0]), kinetic.max())
    assert np.max(np.abs(energy - energy[0])) < 1e-8 * scale, np.ptp(energy)
    if not jit.ENABLED:
        assert fast.meta["right_hand_side"]["path"] == "generic"
        return
    served = fast.meta["right_hand_side"]
    assert served["path"] == "compiled loop map" and served["generic_calls"] == 0, served


@compiled_only
def test_bridge_one_call_path_with_a_revolute_loop_equals_the_general_path(tmp_path):
    """The bridge's one-call rows path (`Bridge._apply_rows`: the same compiled loop rows, M, h and the Schur solve)
    now takes revolute loops: over 0.1 s at dt = 1e-4 s it gives the same state as the general path (per-loop rows,
    PyBullet's M and h) to 1e-9 of its scale (measured 1e-12), and holds the five loop equations to ≤ 1e-8
    (measured 2.5e-11)."""
    from biobullet.bridge import Bridge
    model = mixed_loops(tmp_path)
    finals, worst = [], 0.0
    for fast in (True, False):
        with Bridge(model, dt=1e-4) as bridge:
            assert bridge._rows_fast and bridge._loops_data is not None
            bridge._rows_fast = fast
            for _ in range(1000):
                bridge.step()
                worst = max(worst, max(abs(r) for r in bridge.constraint_residuals().values()))
            finals.append(np.concatenate(bridge.state()[1:]))
    assert np.abs(finals[0] - finals[1]).max() <= 1e-9 * np.abs(finals[1]).max()
    assert worst <= 1e-8
