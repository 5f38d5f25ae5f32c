"""Before/after of the compiled right-hand side for explicit joint-function maps (integrate/compiled_rhs.py
`CompiledExplicitRHS`): whole `simulate` runs with `compiled=False` (the generic path, as before) and
`compiled=True`, in turns, best of several; same results asserted, ratios printed (not asserted)."""
from __future__ import annotations

import biobullet
from biobullet.model.bundled import bundled_model
from compiled_vs_generic import best_walls

CASES = (("coupled_chain.urdf", 1.0, None), ("arm7.urdf", 1.0, None), ("humanoid.urdf", 0.3, None),
         ("shoulder_rhythm.urdf", 1.0, None), ("fourbar_knee.urdf", 1.0, {"knee_A": 0.5}))


def test_compiled_vs_generic(capsys):
    lines = ["compiled right-hand side: whole simulate() wall time, rtol 1e-8 (best of 3)",
             f"  {'model':<24}{'generic [ms]':>14}{'compiled [ms]':>15}{'speed-up':>10}{'max |Δx|':>11}"]
    for name, t_end, initial in CASES:
        model = biobullet.load_model(bundled_model(name))
        generic, compiled, difference = best_walls(model, t_end, initial)
        assert difference < 1e-6, (name, difference)
        lines.append(f"  {name:<24}{generic * 1e3:>14.1f}{compiled * 1e3:>15.1f}"
                     f"{generic / compiled:>9.1f}×{difference:>11.1e}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
