"""Speed-up of the compiled loop right-hand side on coordinate maps of several stages (integrate/compiled_rhs.py
`CompiledReducedRHS`): whole `simulate` runs with `compiled=False` (the generic path, as before for a loop mixed
with joint functions) and `compiled=True`, in turns, best of 3; same results asserted, ratios printed (not
asserted). Models: two four-bar knees on one base (two loops, one resolver), a knee whose loop's known joint is a
polynomial of the hip with an expression-driven ankle after the loop (tests/unit/integrate/multiloop_models.py),
the bundled prosthesis with its library force elements, a four-bar knee on a free-floating base and a coordinate
map built by hand with two loop resolvers and a joint function between them (fixed and floating base), a spatial
chain closed by a revolute loop and that chain with a four-bar knee (revolute and planar loops in one resolver;
tests/unit/constraints/test_revolute_loop_kernel.py)."""
from __future__ import annotations

import sys
from pathlib import Path

import biobullet
from compiled_vs_generic import best_walls

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "integrate"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit" / "constraints"))
from multiloop_models import driven_knee, floating_knee, two_knees, two_resolvers
from test_compiled_multiloop import _prosthesis
from test_revolute_loop_kernel import T_RUN, _initial, mixed_loops, revolute_chain

CASES = (("two knees", two_knees, {"hip_1": 0.3, "knee_A_1": 0.4, "knee_A_2": 0.2}, 1.0),
         ("driven knee", driven_knee, {"hip": 0.3}, 1.0),
         ("prosthesis (library elements)", _prosthesis, None, 0.05),
         ("floating knee", floating_knee, {"hip": 0.3, "knee_A": 0.4}, 1.0),
         ("two resolvers (hand-built map)", two_resolvers, {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2}, 1.0),
         ("two resolvers, floating base", lambda d: two_resolvers(d, floating=True),
          {"hip_1": 0.3, "knee_A_1": 0.4, "hip_2": -0.2}, 1.0),
         # initial: (q0, v0) of the built model
         ("revolute loop (spatial chain)", revolute_chain, lambda m: _initial(m, {}), T_RUN),
         ("revolute + planar loops", mixed_loops, lambda m: _initial(m, {"knee_A": 0.4}), T_RUN))


def test_multistage_compiled_vs_generic(tmp_path, capsys):
    lines = ["compiled loop right-hand side with several stages: whole simulate() wall time, rtol 1e-8 (best of 3)",
             (f"  {'model':<32}{'t_end [s]':>10}{'generic [ms]':>14}{'compiled [ms]':>15}{'speed-up':>10}"
             f"{'max |Δx|':>11}")]
    for name, build, initial, t_end in CASES:
        built = build(tmp_path)   # a model file, or a Model with a hand-built coordinate map
        model = built if isinstance(built, biobullet.Model) else biobullet.load_model(built)
        generic, compiled, difference = best_walls(model, t_end, initial(model) if callable(initial) else initial)
        assert difference < 1e-6, (name, difference)
        lines.append(f"  {name:<32}{t_end:>10g}{generic * 1e3:>14.1f}{compiled * 1e3:>15.1f}"
                     f"{generic / compiled:>9.1f}×{difference:>11.1e}")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
