"""With BIOBULLET_NUMBA=0 the library's kernels run uncompiled, by Python (`core.jit`: debugging) — the same
functions, not a second implementation. In a subprocess with the switch off (kernels at Python speed, so small
models and few steps): the public M, h and v̇ of a model with a joint function and of a four-bar loop equal
Pinocchio's CRBA and RNEA projected through the coordinate map, the engine's right-hand side passes the
d'Alembert check (tests/rhs_oracles.py), and a 20-step run keeps the four-bar's loop closed."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent('''
    import numpy as np
    import biobullet
    from biobullet.core import jit
    from biobullet.integrate.engine import System
    from biobullet.model.bundled import bundled_model
    from rhs_oracles import PinocchioTree, assert_dalembert, loop_closure, scaled_accelerations, velocity_map

    assert not jit.ENABLED
    from biobullet.algorithms import compiled_kernels
    assert compiled_kernels.tree_dynamics_kernel().__code__ is compiled_kernels._tree_dynamics_py.__code__

    for name, initial in (("coupled_chain.urdf", {"shoulder": 0.7, "wrist": -0.4, "shoulder_dot": 1.3,
                                                  "wrist_dot": -0.8}),
                          ("fourbar_knee.urdf", {"knee_A": 0.5, "knee_A_dot": 2.0})):
        model = biobullet.load_model(bundled_model(name))
        tree = PinocchioTree(model)
        system = System(model, "reduced")
        y = system.initial_vector(initial, 0.0)
        q, v = system.split(y)
        # G (ẋ = G v: fixed bases, time-free maps) and γ = ẍ at v̇ = 0, by central differences along the flow
        gradient = velocity_map(system, 0.0, y)
        h = 1e-6
        drift = np.zeros_like(y)
        drift[:system.n_pos] = v
        xd_minus, xd_plus = system.tree_state(0.0, y - h * drift)[1], system.tree_state(0.0, y + h * drift)[1]
        x, xd = system.tree_state(0.0, y)
        gamma = (xd_plus - xd_minus) / (2 * h)
        pin, pm = tree.pin, tree.pin_model
        tree_mass = pin.crba(pm, tree.data, tree.map.config_to_pinocchio(x))
        tree_mass = np.triu(tree_mass) + np.triu(tree_mass, 1).T
        to_ours = np.column_stack([tree.map.velocity_from_pinocchio(e) for e in np.eye(len(xd))])   # a permutation
        expected_mass = gradient.T @ to_ours @ tree_mass @ to_ours.T @ gradient
        expected_bias = gradient.T @ tree.inverse_dynamics(x, xd, gamma)
        mass, bias = model.mass_matrix(q), model.bias_forces(q, v)
        accel = model.forward_dynamics(q, v)
        scale = np.abs(expected_mass).max()
        assert np.abs(mass - expected_mass).max() <= 1e-10 * scale, (name, mass, expected_mass)
        assert np.abs(bias - expected_bias).max() <= 1e-6 * max(np.abs(expected_bias).max(), scale), \\
            (name, bias, expected_bias)
        assert np.abs(expected_mass @ accel + expected_bias).max() <= 1e-6 * max(np.abs(expected_bias).max(), scale)
        ydot = system.rhs(0.0, y)
        assert_dalembert(system, tree, 0.0, y, ydot)
        try:
            assert_dalembert(system, tree, 0.0, y, scaled_accelerations(system, ydot))
        except AssertionError:
            pass
        else:
            raise SystemExit(f"{name}: the d'Alembert check accepts a wrong v̇")
        run = biobullet.simulate(model, 0.02, initial=initial, t_eval=np.linspace(0.0, 0.02, 21), max_step=1e-3,
                                 progress=False)
        assert run.meta["status"] == "finished" and run.meta["steps"] >= 20 and len(run.t) == 21, run.meta
        if name == "fourbar_knee.urdf":
            assert max(loop_closure(tree, run.positions[k]) for k in range(21)) <= 1e-10
        print(name, "ok", run.meta["right_hand_side"]["path"])
''')


def test_the_uncompiled_kernels_agree_with_pinocchio() -> None:
    env = dict(os.environ, BIOBULLET_NUMBA="0", PYTHONPATH=os.pathsep.join(
        [str(TESTS), str(TESTS.parent / "plugin"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count(" ok ") == 2, done.stdout
