"""Exact mirror symmetry of the paper-002 drop (all four mode sets) and the study outputs.

The model and the initial state are mirror symmetric about x = 0, so the exact motion is (see
`biobullet_studies.gibbs_appell_symmetry`). Without the projection the round-off asymmetry is amplified by the impacts
(≈10× per 0.15 s, visible after ~1 s); with it the residual stays ≤ 1e-8 (observed over the full 1.5 s
ss-ss-ss drop, in `scripts`: 1.1e-10 with corrections ≤ 2.3e-11). Here: 0.6 s for ss-ss-ss and sc-cc-cs, which covers the free fall, the
first O1/O4 impact with its three sub-impacts and the first O2/O3 impacts.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from biobullet_studies.paper002 import paper002_chain
from biobullet_studies.gibbs_appell_drop import simulate_drop
from biobullet_studies.gibbs_appell_symmetry import MirrorSymmetry, mirror_symmetry
from biobullet_studies.elastic_robot import MODE_SETS, run, symmetry_residual

T_END = 0.6
DROP_SETS = ("ss-ss-ss", "sc-cc-cs")  # identical links / mirrored sc↔cs links (the others: scripts, benchmark)


@pytest.mark.parametrize("modes", MODE_SETS)
def test_mirror_map_is_an_involution_and_the_dynamics_equivariant(modes) -> None:
    chain = paper002_chain(modes, contact=False)
    sym = mirror_symmetry(chain)
    assert sym is not None and abs(sym.axis) < 1e-15
    rng = np.random.default_rng(3)
    z0, _ = chain.initial_state()
    z = z0 + 1e-2 * rng.normal(size=z0.size)
    zd = rng.normal(size=z0.size)
    z2, zd2 = sym.mirror(*sym.mirror(z, zd))
    assert np.abs(z2 - z).max() < 1e-14 and np.abs(zd2 - zd).max() < 1e-14
    zs, zds = sym.project(z, zd)
    zm, zdm = sym.mirror(zs, zds)
    assert np.abs(zm - zs).max() < 1e-14 and np.abs(zdm - zds).max() < 1e-14
    # equivariance: the flow of the mirrored state is the mirror of the flow (0.01 s, ≈ 0.5–1 modal periods)
    from scipy.integrate import solve_ivp
    n = z.size

    def flow(z_, zd_):
        f = lambda t, y: np.concatenate([y[n:], chain.forward_dynamics(y[:n], y[n:])])  # noqa: E731
        y = solve_ivp(f, (0.0, 0.01), np.concatenate([z_, zd_]), method="DOP853", rtol=1e-12, atol=1e-14).y[:, -1]
        return y[:n], y[n:]

    za, zda = sym.mirror(*flow(z, zd))
    zb, zdb = flow(*sym.mirror(z, zd))
    assert np.abs(za - zb).max() < 1e-11 and np.abs(zda - zdb).max() < 1e-9  # integration error level


def test_asymmetric_model_is_not_projected() -> None:
    chain = paper002_chain("sc-ss-sc")  # sc at both ends is not the mirror of itself
    assert mirror_symmetry(chain) is None
    z0, zd0 = paper002_chain("ss-ss-ss").initial_state()
    zd0 = zd0.copy()
    zd0[-2] = 0.1  # sideways initial velocity: not a symmetric state
    assert MirrorSymmetry.detect(paper002_chain("ss-ss-ss"), z0, zd0) is None


@pytest.fixture(scope="module")
def drops():
    return {m: simulate_drop(paper002_chain(m), t_end=T_END, dt_out=2e-3) for m in DROP_SETS}


@pytest.mark.parametrize("modes", DROP_SETS)
def test_symmetry_residual_over_several_impacts(drops, modes) -> None:
    r = drops[modes]
    assert len(r.contacts) >= 6  # O1/O4 sub-impacts and O2/O3 impacts inside the window
    assert {c["point"] for c in r.contacts} == {"O1", "O2", "O3", "O4"}
    assert symmetry_residual(r) <= 1e-8
    assert r.symmetry_correction is not None and r.symmetry_correction < 1e-9  # only round-off was removed
    assert np.abs(r.energy_error_percent).max() < 1e-5


def test_study_writes_every_output(tmp_path) -> None:
    s = run(tmp_path, "ss-ss-ss", progress=False, t_end=0.45, rtol=1e-8, atol=1e-11)
    names = {p.name for p in tmp_path.iterdir()}
    assert {"joints_x.png", "joints_y.png", "modal_amplitudes.png", "contact_forces.png", "energy.png",
            "deformed_0.7s.png", "impacts.json", "impacts.md", "timeseries.csv", "trajectory.npz", "drop.mp4",
            "summary.json"} <= names
    assert not any(n.startswith(".tmp-") for n in names)  # atomic writes left nothing behind
    assert (tmp_path / "drop.mp4").stat().st_size > 10_000
    header = (tmp_path / "timeseries.csv").read_text().splitlines()[0].split(",")
    for col in ("O1_X1", "O4_X2_dot", "d11", "O2_F_N", "O4_F_T", "W_FT", "energy_error_percent"):
        assert col in header
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["n_sub_impacts_first"] == 3 and summary["symmetry_residual"] <= 1e-8
    assert summary["video"] == "drop.mp4" and s["modes"] == "ss-ss-ss"
