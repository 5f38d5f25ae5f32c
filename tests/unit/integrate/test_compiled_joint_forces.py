"""Joint stops (smooth and switched) and joint spring-dampers on the compiled right-hand sides
(`forces.compiled._joint_forces_py`, used by `CompiledExplicitRHS` and the loop model's `CompiledReducedRHS`).

References: the generic path (`System._checked_rhs`: the elements evaluate the same kernel, by their own call) at
the same states — ẏ must agree to round-off, in the penetrating, the smoothing and the free regions of each stop —
and the energy balance T + V − W + D of whole runs (V from the elements' own
`potential_energy`, D integrated from the kernel's dissipated power), which closes only if the compiled law is the
gradient of the stop's potential plus its damping. Switched stops keep their restart events (located on the
generic event path) with the compiled right-hand side.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import biobullet
from biobullet.core import jit
from biobullet.forces import force_elements
from biobullet.integrate.engine import System

ROOT = Path(__file__).resolve().parents[3]

needs_numba = pytest.mark.skipif(not jit.ENABLED, reason="numba disabled: the compiled path is off")

#: a smooth two-sided stop with a large smoothing band (the gate's C¹ ramp is exercised), a switched one-sided
#: stop with exponent 1.5 and a joint spring-damper
STOPS = ('<joint_stop joint="{a}" lower="-0.15" upper="0.25" stiffness="80" damping="0.6" exponent="2.5" '
         'smoothing="0.05"/>'
         '<joint_stop joint="{b}" upper="0.1" stiffness="120" damping="0.9" type="switched" exponent="1.5"/>'
         '<joint_spring joint="{c}" stiffness="0.8" rest="0.2" damping="0.03"/>')


def _chain(tmp_path: Path, damping: bool = True) -> Path:
    """A 3-link fixed-base chain (identity map) with `STOPS` on j1, j2, j3."""
    stops = STOPS.format(a="j1", b="j2", c="j3")
    if not damping:
        stops = stops.replace('damping="0.6"', 'damping="0"').replace('damping="0.9"', 'damping="0"')
    links, joints = [], []
    for k in range(1, 4):
        links.append(f'<link name="l{k}"><inertial><origin xyz="0.02 0 -0.12"/><mass value="{1.0 + 0.2 * k}"/>'
                     '<inertia ixx="0.01" ixy="0" ixz="0.001" iyy="0.012" iyz="0" izz="0.004"/></inertial></link>')
        parent = "base" if k == 1 else f"l{k - 1}"
        joints.append(f'<joint name="j{k}" type="continuous"><parent link="{parent}"/><child link="l{k}"/>'
                      f'<origin xyz="0 0 {-0.25 if k > 1 else 0}" rpy="0.05 0 0"/><axis xyz="0 1 0"/></joint>')
    text = ('<robot name="stop_chain"><link name="base"><inertial><origin xyz="0 0 0"/><mass value="2"/>'
            '<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>'
            + "".join(links) + "".join(joints)
            + f'<biobullet version="1"><gravity xyz="0 0 -9.81"/><initial joint="j1" position="0.6"/>'
              f'<initial joint="j2" position="-0.4"/>{stops}</biobullet></robot>')
    path = tmp_path / f"stop_chain_{damping}.urdf"
    path.write_text(text)
    return path


def _fourbar(tmp_path: Path) -> Path:
    """The four-bar knee (one loop) with `STOPS` on knee_A (independent), knee_D and knee_B (loop-dependent)."""
    text = (ROOT / "urdf" / "fourbar_knee.urdf").read_text()
    # limits within the swing from knee_A = 0.5 (knee_A −0.43 … 0.5, knee_D −0.25 … 0.27 without stops)
    stops = STOPS.format(a="knee_A", b="knee_D", c="knee_B").replace(
        'lower="-0.15" upper="0.25"', 'lower="-0.3" upper="0.45"').replace('upper="0.1"', 'lower="-0.12"')
    text = text.replace('<coordinates names="knee_A"/>', '<coordinates names="knee_A"/>' + stops)
    path = tmp_path / "fourbar_stops.urdf"
    path.write_text(text)
    return path


@needs_numba
def test_explicit_rhs_with_stops_equals_the_generic_path(tmp_path):
    model = biobullet.load_model(_chain(tmp_path))
    fast = System(model, "reduced", {"compiled": True})
    slow = System(model, "reduced", {"compiled": False})
    assert type(fast._compiled).__name__ == "CompiledExplicitRHS"
    rng = np.random.default_rng(11)
    inside = 0
    for _ in range(40):
        y = fast.initial_vector(None, 0.0)
        y[:6] = rng.uniform(-0.4, 0.45, size=6) * np.array([1, 1, 1, 5, 5, 5])
        inside += (y[0] < -0.15) + (y[0] > 0.25) + (y[1] > 0.1)
        compiled, generic = fast._compiled(0.0, y), slow._checked_rhs(0.0, y)
        assert compiled is not None
        scale = np.maximum(np.abs(generic), 1e-12 * np.max(np.abs(generic)))
        assert np.all(np.abs(compiled - generic) <= 1e-12 * scale + 1e-13), compiled - generic
    assert inside >= 20   # the stops were engaged in many of the states


@needs_numba
def test_loop_rhs_with_stops_equals_the_generic_path(tmp_path):
    model = biobullet.load_model(_fourbar(tmp_path))
    fast = System(model, "reduced", {"shadow": True})
    slow = System(model, "reduced", {"shadow": True, "compiled": False})
    assert type(fast._compiled).__name__ == "CompiledReducedRHS" and slow._compiled is None
    trajectory = biobullet.simulate(model, 0.4, initial={"knee_A": 0.5}, t_eval=np.linspace(0, 0.4, 25),
                                    compiled=False, progress=False)
    rows_x, rows_v = slow.shadow
    engaged = 0
    for k, t in enumerate(trajectory.t):
        x, xd = trajectory.positions[k], trajectory.velocities[k]
        engaged += any(e.generalized_force(model, x, xd, t).any() for e in force_elements(model)
                       if type(e).__name__ == "JointStop")
        y = np.concatenate([trajectory.q[k], trajectory.v[k], x[rows_x], xd[rows_v], [0.0, 0.0]])
        slow._checked_rhs(t, y)   # both from the resolver's cache at this solution
        compiled, generic = fast._compiled(t, y), slow._checked_rhs(t, y)
        assert compiled is not None, t
        scale = np.maximum(np.abs(generic), 1e-12 * np.max(np.abs(generic)))
        assert np.all(np.abs(compiled - generic) <= 1e-11 * scale + 1e-12), (t, compiled - generic)
    assert engaged >= 5


@needs_numba
@pytest.mark.parametrize("which", ["chain", "fourbar"])
def test_runs_agree_and_the_energy_balance_closes(tmp_path, which):
    """Whole runs through the stops (the switched one restarts the integrator at its events) with the compiled
    path on and off agree to the tolerance; the energy balance closes on the compiled run."""
    model = biobullet.load_model(_chain(tmp_path) if which == "chain" else _fourbar(tmp_path))
    initial = {"knee_A": 0.5} if which == "fourbar" else None
    kw = dict(rtol=1e-10, atol=1e-12, initial=initial, progress=False, t_eval=np.linspace(0.0, 0.6, 61))
    fast, slow = (biobullet.simulate(model, 0.6, compiled=c, **kw) for c in (True, False))
    events = [name for name, _, _ in fast.events]
    assert events == [name for name, _, _ in slow.events] and events, "the switched stop's events are located"
    assert np.abs(fast.positions - slow.positions).max() < 1e-7
    balance = fast.energy_balance()
    assert fast.energy["dissipated"][-1] > 1e-4   # the stops' dampers did work
    assert np.ptp(balance) < 1e-7 * max(1.0, float(np.abs(fast.energy["kinetic"]).max()))
