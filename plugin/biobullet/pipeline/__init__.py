"""The compiled model, its data workspace and the one staged forward pipeline (docs/architecture.md).

`compile_model(model)` → `CompiledModel` (immutable named arrays; `Model.compiled`), `Data(compiled)` (every
buffer and per-run cache; `Model.data()`), and the stages of `stages.py` — joint state → joint-function jets →
forces and contacts → M, h → solve — run by `forward(model, data, q, v, tau, t)` (in place), `mass_matrix`,
`bias_forces` (`forward.py`) and by the engine's compiled right-hand side (`stages.rhs_py`).
"""
