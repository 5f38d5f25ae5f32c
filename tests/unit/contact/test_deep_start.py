"""A contact that starts far inside its ground gets one warning (engine and bridge: `Contact.begin`); a ball
resting at its static compression does not. The ball of `contact.testbed.drop_urdf` (1 kg, r = 0.05 m, ground
z = 0, Kelvin–Voigt k = 1e5 N/m): at drop = −0.3 m it is 0.35 m deep (centre 0.3 m below the ground, radius 0.05 m), elastic force 3.5e4 N ≈ 3,600 weights; at rest
the compression is m g / k ≈ 1e-4 m (one weight)."""
from __future__ import annotations

import warnings

import pytest

from biobullet.contact.testbed import drop_urdf
from biobullet.loader import load_text
from biobullet.integrate import simulate

LAW = {"normal_law": "kelvin_voigt", "stiffness": "1e5", "damping": "50"}


def _warnings(run) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run()
    return [str(w.message) for w in caught if "inside its ground" in str(w.message)]


def test_deep_start_warns_on_the_engine_and_the_bridge(tmp_path):
    model = load_text(drop_urdf(LAW), tmp_path)
    deep = _warnings(lambda: simulate(model, 1e-3, initial={"drop": -0.3}, progress=False))
    assert len(deep) == 1 and "starts 0.35 m inside its ground" in deep[0] and 'link="ball"' in deep[0]
    resting = _warnings(lambda: simulate(model, 1e-3, initial={"drop": 0.05 - 9.81 / 1e5}, progress=False))
    assert resting == []
    pytest.importorskip("pybullet")
    from biobullet.bridge import Bridge
    with Bridge(model, dt=1e-4) as bridge:
        def reset_deep():
            bridge.reset(q=[-0.3])
        assert len(_warnings(reset_deep)) == 1
