"""How far the paper's printed general formulas (40), (43), (46), (47), (48) are from the correct mass matrix, while
(41), (42), (44), (45) as printed agree — on the six- and three-link reference models at the issue's states and on
random states. The correct matrix is the SymPy-verified recursion (test_lagrange_sympy.py)."""
from __future__ import annotations

import numpy as np
from biobullet.extensible.chain_model import reference_flight_state, six_link_reference, three_link_reference
from biobullet_studies.anthropomorph_printed import printed_differences

WRONG = ("40", "43", "46", "47", "48")
RIGHT = ("41", "42", "44", "45")


def _check(model, q, expected_wrong_min):
    M = model.mass_matrix(q)
    literal = printed_differences(model, q, M)
    typo_fixed = printed_differences(model, q, M, inertia_typo_fixed=True)
    for key in RIGHT:
        assert literal[key]["max_rel"] < 1e-14, key
    for key, lower in expected_wrong_min.items():
        assert literal[key]["max_rel"] > lower, (key, literal[key])
    return literal, typo_fixed


def test_six_link_printed_formulas_differ_at_the_reference_state():
    model = six_link_reference()
    q, _ = reference_flight_state(model)
    # measured (docs/anthropomorph.md): 40/43 54 %, 46 231 %, 47 164 %, 48 118 % of the block's largest entry
    literal, typo_fixed = _check(model, q, {"40": 0.5, "43": 0.5, "46": 2.0, "47": 1.5, "48": 1.0})
    # not only the δ_ij l ↔ I typo: with I restored the wrong mass sums still give O(1) errors
    for key in WRONG:
        assert typo_fixed[key]["max_rel"] > 0.5, key


def test_three_link_printed_formulas_differ():
    model = three_link_reference()
    q = np.concatenate([[0.0, 1.2], np.pi / 2 + np.array([0.2, -0.25, 0.1]), 1.01 * model.rest_lengths])
    literal, typo_fixed = _check(model, q, {"40": 2.0, "43": 2.0, "46": 3.0, "47": 3.0, "48": 0.2})
    # with one trunk link (48) is right apart from the δ_ij l ↔ I typo
    assert typo_fixed["48"]["max_rel"] < 1e-14
    assert typo_fixed["46"]["max_rel"] > 3.0


def test_printed_right_formulas_hold_on_random_states_and_shapes():
    rng = np.random.default_rng(2)
    from test_kinematics import random_model, random_state
    for shape in [(2, 2, 2), (3, 3, 3), (1, 2, 3)]:
        model = random_model(shape, rng)
        q, _ = random_state(model, rng)
        d = printed_differences(model, q, model.mass_matrix(q))
        for key in RIGHT:
            assert d[key]["max_rel"] < 1e-13
        assert max(d[key]["max_rel"] for key in WRONG) > 0.1
