"""Paper 003 study post-processing on a tiny synthetic sweep directory (no simulation): spectrum map matrix,
spectral / Poincaré period extraction, critical k, findings and the written figures/report."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from biobullet_studies import prosthesis_study as study

FREQ = [j / 6.0 for j in range(19)]       # f·T, window 6T (as `amplitude_spectrum`), up to 3


def _spectrum(**lines: float) -> list[float]:
    """Amplitudes on FREQ: gait line 0.3 at 1, 0.1 at 2, plus the given extra lines {"j": amplitude}."""
    amp = [0.0] * len(FREQ)
    amp[0], amp[6], amp[12] = 0.4, 0.3, 0.1
    for j, a in lines.items():
        amp[int(j[1:])] = a
    return amp


def _point(k: float, period, amp, poincare, *, ratio=0.05, hiking=1.0, evidence=True) -> dict:
    result = {"period": period, "peak_knee_flexion_deg": 60.0 - k / 1e3, "correlation": 0.4 + k / 1e5,
              "subharmonic_content": 0.0, "amplitude_half_hz": amp[3], "amplitude_third_hz": amp[2],
              "amplitude_1hz": amp[6], "spectrum_frequency": FREQ, "spectrum_amplitude": amp, "wall_time": 1.0}
    if evidence:
        stop = 0.0 if period == 1 else 500.0
        result.update({"poincare_knee_deg": poincare, "evidence_cycles": [18, 19],
                       "stop_force_max_per_cycle_N": [stop, stop], "stop_engaged_per_cycle_s": [0.0, 0.3 * (stop > 0)],
                       "heel_peak_per_cycle_N": [700.0, 700.0] if period == 1 else [0.0, 0.0],
                       "toe_peak_per_cycle_N": [200.0, 210.0],
                       "heel_strike_phase_per_cycle": [0.01, 0.01] if period == 1 else [None, None],
                       "heel_strike_knee_per_cycle_deg": [5.0, 5.0] if period == 1 else [None, None],
                       "stop_force_max_N": stop, "stop_engaged_s": 0.15 * (stop > 0),
                       "heel_peak_N": 700.0 if period == 1 else 0.0, "toe_peak_N": 210.0,
                       "heel_strike_knee_deg": 5.0 if period == 1 else None,
                       "heel_strike_knee_range_deg": 0.0 if period == 1 else None})
    params = {"damper.ratio": ratio, "hip_hiking": hiking, "cycles": 20, "damper.stiffness": k}
    return {"id": f"p{int(k)}_{ratio}_{hiking}", "params": params, "status": "ok", "result": result}


def _write(sweep_dir: Path, points) -> None:
    (sweep_dir / "points").mkdir(parents=True)
    for p in points:
        (sweep_dir / "points" / f"{p['id']}.json").write_text(json.dumps(p))
    (sweep_dir / "points" / "broken.json").write_text("{not json")
    failed = dict(points[0], id="failed", status="failed", result=None)
    (sweep_dir / "points" / "failed.json").write_text(json.dumps(failed))


P1 = [3.0] * 21                                    # period 1 at t = nT
P2 = [3.0, 9.0] * 10 + [3.0]                       # period 2
P3 = ([1.0, 4.0, 7.0] * 7)                         # period 3


@pytest.fixture()
def sweeps(tmp_path: Path) -> Path:
    base = tmp_path / "sweeps"
    # written in shuffled k order on purpose
    _write(base / "k", [_point(2.0e4, 2, _spectrum(j3=0.05, j9=0.01), P2),
                        _point(1.0e4, 1, _spectrum(), P1),
                        _point(1.5e4, 3, _spectrum(j2=0.02, j4=0.004), P3)])
    _write(base / "k_hiking", [_point(1.0e4, 1, _spectrum(), P1, hiking=1.006),
                               _point(2.0e4, None, _spectrum(j1=0.02), [0.0, 1.0, 3.0, 2.5, 7.0] * 4 + [1.0],
                                      hiking=1.006)])
    _write(base / "critical_k", [_point(1.0e4, 2, _spectrum(j3=0.05), P2, ratio=0.08, evidence=False),
                                 _point(1.5e4, 1, _spectrum(), P1, ratio=0.08, evidence=False),
                                 _point(2.0e4, 1, _spectrum(), P1, ratio=0.08, evidence=False)])
    return base


def test_load_points_and_spectrum_matrix(sweeps: Path) -> None:
    pts = study.load_points(sweeps / "k")
    assert [p["params"]["damper.stiffness"] for p in pts] == [1.0e4, 1.5e4, 2.0e4]   # ok only, sorted by k
    k, freq, amp = study.spectrum_matrix(pts)
    assert k.tolist() == [1.0e4, 1.5e4, 2.0e4]
    assert freq.tolist() == FREQ
    assert amp.shape == (3, 19)
    assert amp[0].tolist() == _spectrum()
    assert amp[1, 2] == 0.02 and amp[1, 4] == 0.004 and amp[2, 3] == 0.05 and amp[2, 9] == 0.01
    other = dict(pts[0], result=dict(pts[0]["result"], spectrum_frequency=[f * 2 for f in FREQ]))
    with pytest.raises(ValueError, match="frequency grid"):
        study.spectrum_matrix([pts[1], other])


def test_spectral_period_exact() -> None:
    assert study.spectral_period(FREQ, _spectrum()) == 1
    assert study.spectral_period(FREQ, _spectrum(j3=0.05, j9=0.01)) == 2
    assert study.spectral_period(FREQ, _spectrum(j2=0.02, j4=0.004)) == 3
    assert study.spectral_period(FREQ, _spectrum(j2=0.02, j3=0.02)) == 6
    assert study.spectral_period(FREQ, _spectrum(j3=0.002)) == 1            # below 1 % of the 0.3 line
    assert study.spectral_period([0.0, 0.25, 0.5, 1.0], [0.1, 0.2, 0.0, 0.3], max_period=3) is None


def test_point_rows_periods_and_critical_k(sweeps: Path) -> None:
    rows = study.point_rows(study.load_points(sweeps / "k"))
    assert [(r["k"], r["period"], r["spectral_period"], r["poincare_period_samples"]) for r in rows] == [
        (1.0e4, 1, 1, 1), (1.5e4, 3, 3, 3), (2.0e4, 2, 2, 2)]
    hike = study.point_rows(study.load_points(sweeps / "k_hiking"))
    assert [(r["spectral_period"], r["poincare_period_samples"]) for r in hike] == [(1, 1), (6, None)]
    assert study.critical_k([1e4, 1.5e4, 2e4], [2, 1, 1]) == 1.5e4
    assert study.critical_k([2e4, 1e4, 1.5e4], [1, 1, None]) == 2e4   # unsorted input
    assert study.critical_k([1e4, 2e4], [1, 2]) is None
    assert study.critical_k([1e4, 2e4], [1, 1]) == 1e4


def test_run_writes_figures_report_summary(sweeps: Path, tmp_path: Path) -> None:
    out = tmp_path / "study"
    summary = study.run(str(out), sweeps_dir=str(sweeps))
    names = {Path(f).name for f in summary["figures"]}
    assert names == {"spectrum_map_k.png", "spectrum_map_k_hiking.png", "bifurcation.png", "period_vs_k.png",
                     "rho_peak_vs_k.png", "evidence.png"}
    for name in names:
        assert (out / name).stat().st_size > 1000
    f = summary["findings"]
    assert f["non_period1_k"] == [1.5e4, 2.0e4]
    assert f["half_subharmonic_k"] == [2.0e4]
    assert f["non_period1_k_hiking"] == [2.0e4]
    assert f["critical_k"] == {"0.05": None, "0.08": 1.5e4}
    assert f["best_rho"] == {"rho": 0.4 + 2e4 / 1e5, "k": 2e4, "ratio": 0.05, "hiking": 1.0}
    assert f["peak_flexion_falls_with_k_period1"] is False     # a single period-1 point
    ev = f["evidence"]
    assert ev["period1"]["stop_force_max_N"] == [0.0, 0.0] and ev["other"]["stop_force_max_N"] == [500.0, 500.0]
    assert ev["other"]["n_without_heel_strike"] == 2 and ev["period1"]["heel_strike_knee_deg"] == [5.0, 5.0]
    assert summary["n_points"] == {"k": 3, "k_hiking": 2, "critical_k": 3}
    assert summary["n_points_with_evidence"] == {"k": 3, "k_hiking": 2, "critical_k": 0}
    saved = json.loads((out / "summary.json").read_text())
    assert saved["findings"]["critical_k"] == {"0.05": None, "0.08": 15000.0}
    report = (out / "report.md").read_text()
    assert "| paper finding | ours | reproduced? | why |" in report
    assert report.count("\n| ") >= 6


def test_run_without_points_fails_clearly(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no finished points"):
        study.run(str(tmp_path / "o"), sweeps_dir=str(tmp_path / "none"))


def test_sweep_without_progress_does_not_import_tqdm() -> None:
    """The study runs its sweeps with progress=False: the runner must not import tqdm then."""
    import subprocess
    import sys

    code = ("import sys; from biobullet.sweep import runner; bar = runner._progress(3, 0, 'x', False); "
            "bar.update(1); bar.set_postfix(failed=1, refresh=False); bar.close(); "
            "assert 'tqdm' not in sys.modules, 'tqdm imported'; print('ok')")
    env = {**__import__("os").environ, "PYTHONPATH": str(Path(study.__file__).resolve().parents[2])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
