"""Paper 003 (Lü et al. 2020) gait study from the k sweeps: Fig. 11-style spectrum map, bifurcation, period,
ρ / peak flexion per c/k, and mechanism evidence (why our subharmonics sit at high k, not low k).

`run(out_dir, sweeps_dir="out/prosthesis_sweeps", run_missing=False)` reads the sweep outputs
`<sweeps_dir>/{k,k_hiking,critical_k}/points/*.json` (written by `biobullet sweep sweeps/prosthesis_*.json`;
point function `prosthesis.gait`) — or, with run_missing, first runs those sweeps (finished points are
reused) — and writes into out_dir:

  spectrum_map_k.png, spectrum_map_k_hiking.png   x = k, y = f·T 0–3 (1/3, 1/2 dashed), colour = amplitude (log)
  bifurcation.png                                  knee angle at t = nT (last 12 cycles) vs k, both sweeps
  period_vs_k.png                                  Poincaré period per k (recorded) and spectral period
  rho_peak_vs_k.png                                ρ and peak knee flexion vs k per c/k (and hip hiking)
  evidence.png                                     knee-stop force and engagement time per cycle, heel/toe peak
                                                   force, knee angle at heel strike and at t = nT, vs k
  report.md, summary.json

Points written before the evidence keys existed (see `prosthesis.EVIDENCE_KEYS`) still feed the map, period,
ρ and flexion plots; the evidence panels use only points that have the keys.
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from biobullet.core import atomic
from biobullet_studies.common import say, simulated_time, write_json

SWEEPS = {"k": "prosthesis_k.json", "k_hiking": "prosthesis_k_hiking.json",
          "critical_k": "prosthesis_critical_k.json"}
N_LAST_POINCARE = 12
#: spectral period: components above SPECTRAL_REL × (largest non-zero-frequency amplitude) count
SPECTRAL_REL = 1e-2
MAX_SPECTRAL_PERIOD = 6
#: a point is "period 1" for the critical-k search when its recorded Poincaré period is 1
PAPER = {"critical_k_005": 1.6e4, "max_rho": 0.9896}


# ---------------------------------------------------------------------------------------------- reading
def load_points(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """The ok point records of one sweep directory, sorted by (c/k, hip hiking, k)."""
    records = []
    for path in sorted(Path(sweep_dir, "points").glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("status") == "ok" and isinstance(record.get("result"), dict):
            records.append(record)
    return sorted(records, key=_key)


def _key(record: Mapping[str, Any]) -> tuple[float, float, float]:
    p = record["params"]
    return (float(p.get("damper.ratio", 0.05)), float(p.get("hip_hiking", 1.0)), float(p["damper.stiffness"]))


def spectrum_matrix(points: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, f·T, amplitudes (n_k, n_f)) of points sorted by k; every point must share one frequency grid."""
    pts = sorted(points, key=lambda r: float(r["params"]["damper.stiffness"]))
    if not pts:
        raise ValueError("no points")
    freq = np.asarray(pts[0]["result"]["spectrum_frequency"], dtype=float)
    rows = []
    for r in pts:
        f = np.asarray(r["result"]["spectrum_frequency"], dtype=float)
        if f.shape != freq.shape or np.max(np.abs(f - freq)) > 1e-12:
            raise ValueError(f"point {r.get('id')} has a different frequency grid")
        rows.append(np.asarray(r["result"]["spectrum_amplitude"], dtype=float))
    k = np.array([float(r["params"]["damper.stiffness"]) for r in pts])
    return k, freq, np.vstack(rows)


def spectral_period(freq: Sequence[float], amp: Sequence[float], *, rel: float = SPECTRAL_REL,
                    max_period: int = MAX_SPECTRAL_PERIOD) -> int | None:
    """Smallest p ≤ max_period such that every significant component (amplitude > rel × the largest one at
    f > 0) lies on a multiple of 1/p (f in units of 1/T, to 1e-6); None = no such p (irregular)."""
    f = np.asarray(freq, dtype=float)
    a = np.asarray(amp, dtype=float)
    pos = f > 1e-9
    if not np.any(pos):
        return None
    top = float(np.max(a[pos]))
    if top <= 0.0:
        return 1
    sig = f[pos & (a > rel * top)]
    for p in range(1, max_period + 1):
        if np.all(np.abs(sig * p - np.round(sig * p)) < 1e-6):
            return p
    return None


def critical_k(ks: Sequence[float], periods: Sequence[int | None]) -> float | None:
    """Smallest k of the sweep above (and at) which every point is period-1; None if the last one is not."""
    pairs = sorted(zip(ks, periods))
    crit = None
    for k, p in reversed(pairs):
        if p != 1:
            break
        crit = k
    return crit


def _res(record: Mapping[str, Any], key: str) -> Any:
    return record["result"].get(key)


def _has_evidence(record: Mapping[str, Any]) -> bool:
    return "stop_force_max_per_cycle_N" in record["result"]


def point_rows(points: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One summary row per point: parameters, recorded/spectral/Poincaré period and the evidence scalars."""
    from biobullet.analysis.poincare import classify_period

    rows = []
    for r in points:
        p, res = r["params"], r["result"]
        samples = res.get("poincare_knee_deg")
        poincare = None
        if samples:
            s = np.asarray(samples[-N_LAST_POINCARE:], dtype=float)
            poincare = classify_period(s, max_period=MAX_SPECTRAL_PERIOD, tol=0.05)  # 0.05° on the samples
        row = {"k": float(p["damper.stiffness"]), "ratio": float(p.get("damper.ratio", 0.05)),
               "hiking": float(p.get("hip_hiking", 1.0)), "period": res.get("period"),
               "spectral_period": spectral_period(res["spectrum_frequency"], res["spectrum_amplitude"])
               if "spectrum_frequency" in res else None,
               "poincare_period_samples": poincare}
        for key in ("correlation", "peak_knee_flexion_deg", "subharmonic_content", "amplitude_half_hz",
                    "amplitude_third_hz", "amplitude_1hz", "stop_force_max_N", "stop_engaged_s", "heel_peak_N",
                    "toe_peak_N", "heel_strike_knee_deg", "heel_strike_knee_range_deg"):
            value = res.get(key)
            row[key] = None if isinstance(value, float) and not math.isfinite(value) else value
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------- running
def _ensure_sweeps(sweeps_dir: Path, workers: int | None) -> None:
    from biobullet.sweep import run_sweep

    config_dir = Path(__file__).resolve().parents[3] / "sweeps"
    for sub, name in SWEEPS.items():
        say(f"prosthesis-study: sweep {name} → {sweeps_dir / sub}")
        run_sweep(config_dir / name, workers=workers, out=sweeps_dir / sub, progress=False)


def run(out_dir: str, sweeps_dir: str = "out/prosthesis_sweeps", run_missing: bool = False,
        workers: int | None = 2, **_: Any) -> dict:
    """Draw the study figures from the sweep outputs; writes report.md and summary.json into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    base = Path(sweeps_dir)
    if run_missing:
        _ensure_sweeps(base, workers)
    sweeps = {sub: load_points(base / sub) for sub in SWEEPS}
    if not sweeps["k"]:
        raise FileNotFoundError(f"no finished points under {base / 'k'} (run the sweeps or pass run_missing=True)")
    rows = {sub: point_rows(pts) for sub, pts in sweeps.items()}
    figures = _figures(out, sweeps, rows)
    findings = _findings(rows)
    summary = {"scenario": "prosthesis-study", "paper": "003 (Lü et al. 2020)", "sweeps_dir": str(base),
               "substitute_data": True, "n_points": {s: len(p) for s, p in sweeps.items()},
               "n_points_with_evidence": {s: sum(map(_has_evidence, p)) for s, p in sweeps.items()},
               "figures": [str(f) for f in figures], "findings": findings, "points": rows,
               **simulated_time(None, "figures and findings from stored sweep results: the simulations run in "
                                      "`biobullet sweep` (also with run_missing, not counted here)")}
    write_json(out / "summary.json", summary)
    atomic.write_text(out / "report.md", _report(findings, rows, figures))
    say(f"prosthesis-study: {sum(len(p) for p in sweeps.values())} points, {len(figures)} figures → {out}")
    return summary


# ---------------------------------------------------------------------------------------------- findings
def _by(rows: Sequence[Mapping[str, Any]], ratio: float | None = None, hiking: float | None = None):
    return [r for r in rows if (ratio is None or abs(r["ratio"] - ratio) < 1e-12)
            and (hiking is None or abs(r["hiking"] - hiking) < 1e-12)]


def _fmt_k(value: float | None) -> str:
    return "none in range" if value is None else f"{value:.3g} N/m"


def _findings(rows: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    base = _by(rows["k"], 0.05, 1.0)
    hike = _by(rows["k_hiking"], 0.05)
    f: dict[str, Any] = {}
    f["non_period1_k"] = [r["k"] for r in base if r["period"] != 1]
    f["non_period1_k_hiking"] = [r["k"] for r in hike if r["period"] != 1]
    f["half_subharmonic_k"] = [r["k"] for r in base if (r["amplitude_half_hz"] or 0) > 1e-3]
    f["half_subharmonic_k_hiking"] = [r["k"] for r in hike if (r["amplitude_half_hz"] or 0) > 1e-3]
    f["critical_k"] = {}
    all_rows = list(rows["k"]) + list(rows["critical_k"])
    for ratio in sorted({r["ratio"] for r in all_rows}):
        sel = sorted(_by(all_rows, ratio, 1.0), key=lambda r: r["k"])
        f["critical_k"][f"{ratio:g}"] = critical_k([r["k"] for r in sel], [r["period"] for r in sel])
    rhos = [r for r in all_rows + list(rows["k_hiking"]) if r["correlation"] is not None]
    best = max(rhos, key=lambda r: r["correlation"]) if rhos else None
    f["best_rho"] = None if best is None else {"rho": best["correlation"], "k": best["k"], "ratio": best["ratio"],
                                               "hiking": best["hiking"]}
    peaks = [(r["k"], r["peak_knee_flexion_deg"]) for r in sorted(base, key=lambda r: r["k"])]
    period1 = [p for k, p in peaks if k in {r["k"] for r in base if r["period"] == 1}]
    f["peak_flexion_deg_range"] = [peaks[0][1], peaks[-1][1]] if peaks else None
    f["peak_flexion_falls_with_k_period1"] = bool(len(period1) > 1 and np.all(np.diff(period1) < 0))
    f["non_period1_k_by_ratio"] = {f"{ratio:g}": [r["k"] for r in sorted(_by(all_rows, ratio, 1.0),
                                                                         key=lambda r: r["k"]) if r["period"] != 1]
                                   for ratio in sorted({r["ratio"] for r in all_rows})}
    for label, sel in (("", base), ("_hiking", hike)):
        sel = sorted((r for r in sel if r["stop_force_max_N"] is not None), key=lambda r: r["k"])
        f["stop_onset_k" + label] = next((r["k"] for r in sel if r["stop_force_max_N"] > 1.0), None)
        f["heel_contact_lost_k" + label] = next((r["k"] for r in sel if not r["heel_peak_N"]), None)
    ev = [r for r in base if r["stop_force_max_N"] is not None]
    f["evidence"] = _evidence_summary(ev) if ev else None
    f["evidence_hiking"] = _evidence_summary([r for r in hike if r["stop_force_max_N"] is not None]) or None
    return f


def _evidence_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Evidence scalars split into the period-1 points and the others."""
    if not rows:
        return {}
    out = {}
    for label, sel in (("period1", [r for r in rows if r["period"] == 1]),
                       ("other", [r for r in rows if r["period"] != 1])):
        if not sel:
            continue
        out[label] = {"k": [r["k"] for r in sel]}
        for key in ("stop_force_max_N", "stop_engaged_s", "heel_peak_N", "toe_peak_N", "heel_strike_knee_deg",
                    "heel_strike_knee_range_deg"):
            vals = [r[key] for r in sel if r[key] is not None]
            out[label][key] = [min(vals), max(vals)] if vals else None
        out[label]["n_without_heel_strike"] = sum(r["heel_strike_knee_deg"] is None for r in sel)
        if out[label]["stop_force_max_N"]:
            out[label]["stop_overshoot_deg"] = [stop_overshoot_deg(v) for v in out[label]["stop_force_max_N"]]
    return out


def stop_overshoot_deg(force: float) -> float:
    """Static overshoot of the knee (knee_B) past the hyperextension stop that carries `force`:
    F = K_c · d · Δθ (paper 003 K_c = 7.5e4 N/m, d = 1 cm ⇒ a rotational stiffness K_c d² = 7.5 N m/rad)."""
    from biobullet_studies.prosthesis_model import Parameters

    p = Parameters()
    return math.degrees(force / (p.stop_k * p.stop_lever))


def _rng(pair, fmt="{:.0f}") -> str:
    if not pair:
        return "–"
    return fmt.format(pair[0]) if abs(pair[1] - pair[0]) < 1e-9 else f"{fmt.format(pair[0])}–{fmt.format(pair[1])}"


def _report(f: Mapping[str, Any], rows, figures: Sequence[Path]) -> str:
    ev = f.get("evidence") or {}
    p1, other = ev.get("period1", {}), ev.get("other", {})
    why_window = "evidence plots missing (points without evidence keys)"
    if p1 and other:
        why_window = (f"period-1 points (k {_rng([min(p1['k']), max(p1['k'])], '{:.3g}')}): knee-stop peak "
                      f"{_rng(p1['stop_force_max_N'])} N engaged {_rng(p1['stop_engaged_s'], '{:.2f}')} s/cycle, heel "
                      f"peak {_rng(p1['heel_peak_N'])} N, knee at heel strike {_rng(p1['heel_strike_knee_deg'], '{:.1f}')}°; "
                      f"irregular/subharmonic points (k {_rng([min(other['k']), max(other['k'])], '{:.3g}')}): stop "
                      f"{_rng(other['stop_force_max_N'])} N engaged {_rng(other['stop_engaged_s'], '{:.2f}')} s, heel "
                      f"peak {_rng(other['heel_peak_N'])} N ({other['n_without_heel_strike']} of {len(other['k'])} "
                      f"without heel contact), toe peak {_rng(other['toe_peak_N'])} N, knee at heel strike "
                      f"{_rng(other['heel_strike_knee_deg'], '{:.1f}')}° (spread per point up to "
                      f"{_rng(other['heel_strike_knee_range_deg'], '{:.1f}')}°). Mechanism: the damper spring "
                      f"extends the knee harder as k grows (heel impact ↑, knee flexion at heel strike ↓); past the "
                      f"window edge the knee reaches the hyperextension stop before ground contact, the stop (K_c d² "
                      f"= 7.5 N m/rad) yields by ~{_rng(other.get('stop_overshoot_deg'))}° of knee_B, the foot lands "
                      f"toe-first without heel contact, and the stop impact alternates cycle to cycle → 1/2 line / "
                      f"irregular. In the paper's (unknown) geometry the window sits at low k instead")
    crit = f["critical_k"]
    best = f["best_rho"] or {}
    lines = [
        "# Paper 003 gait study — sweeps vs the paper (substitute geometry, masses and gait data)", "",
        "Figures: " + ", ".join(p.name for p in figures), "",
        "| paper finding | ours | reproduced? | why |", "|---|---|---|---|",
        f"| c/k = 0.05: subharmonic windows at low k (1/2 at 1.40–1.47e4, 1/3 at 1.50–1.56e4), period T from "
        f"1.6e4 | non-period-1 at k = {', '.join(f'{k:.3g}' for k in f['non_period1_k']) or 'none'}; 1/2 line "
        f"(> 1e-3 rad) at k = {', '.join(f'{k:.3g}' for k in f['half_subharmonic_k']) or 'none'}; period 1 below | "
        f"no (reversed: irregular window at high k) | {why_window} |",
        f"| hip hiking (y × 1.006) restores period T in the windows | non-period-1 at k = "
        f"{', '.join(f'{k:.3g}' for k in f['non_period1_k_hiking']) or 'none'} | "
        f"{'yes' if not f['non_period1_k_hiking'] else 'no (window moved to lower k, not removed)'} | "
        f"hip_y × 1.006 raises the hip, so the foot reaches the ground later: the knee-stop is first loaded at k = "
        f"{_fmt_k(f.get('stop_onset_k_hiking'))} with hiking vs {_fmt_k(f.get('stop_onset_k'))} without, heel "
        f"contact is lost from {_fmt_k(f.get('heel_contact_lost_k_hiking'))} vs "
        f"{_fmt_k(f.get('heel_contact_lost_k'))} — the stop-limited, toe-first regime starts at lower k |",
        "| critical k (c/k = 0.05) = 1.6e4; larger c/k → lower critical k | critical k per c/k: "
        + ", ".join(f"{r}: {_fmt_k(v)}" for r, v in crit.items())
        + "; non-period-1 k per c/k: "
        + "; ".join(f"{r}: {', '.join(f'{k:.3g}' for k in ks) or 'none'}" for r, ks in
                    f["non_period1_k_by_ratio"].items())
        + f" | {'partly' if any(v is not None for v in crit.values()) else 'no'} (a critical k exists only where "
        "every point above the last non-period-1 point is period 1) | c/k = 0.08 has the paper's pattern (subharmonic/"
        "irregular points at low k, period 1 above); at c/k ≤ 0.05 the stop-limited window sits at the top of the "
        "range, so no k above it is left |",
        f"| max ρ = 0.9896 | ρ = {best.get('rho', float('nan')):.3f} (k = {best.get('k', float('nan')):.3g}, c/k = "
        f"{best.get('ratio', float('nan')):g}, hiking {best.get('hiking', float('nan')):g}) | no | substitute gait "
        f"data, geometry and masses; the knee cannot follow the reference flexion shape |",
        f"| peak knee flexion decreases with k | {_rng(f['peak_flexion_deg_range'], '{:.1f}')}° over the k sweep; "
        f"monotone on period-1 points: {f['peak_flexion_falls_with_k_period1']} | yes | stiffer damper spring "
        f"resists flexion |",
        "", "Evidence (c/k = 0.05, no hiking): " + json.dumps(ev), "",
        "Evidence (hip hiking): " + json.dumps(f.get("evidence_hiking")), "",
        "## Per point (evidence over the last 6 cycles)", "",
        "| sweep | c/k | hiking | k (N/m) | period (Poincaré) | spectral period | 1/2 line (rad) | stop max (N) | "
        "stop engaged (s/cycle) | heel peak (N) | toe peak (N) | knee at heel strike (deg) | ρ | peak flexion (deg) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[_row_line(sub, r) for sub in ("k", "k_hiking", "critical_k") for r in rows[sub]], "",
        "Per point: summary.json `points` (period = Poincaré period of the knee over the last 12 cycles, None = "
        "no period ≤ 6; spectral_period = smallest p with every component > 1 % of the largest on a multiple of "
        "1/p).", "",
    ]
    return "\n".join(lines)


def _row_line(sub: str, r: Mapping[str, Any]) -> str:
    def v(key, fmt):
        x = r.get(key)
        return "–" if x is None else fmt.format(x)
    return (f"| {sub} | {r['ratio']:g} | {r['hiking']:g} | {r['k']:.3g} | {v('period', '{}')} | "
            f"{v('spectral_period', '{}')} | {v('amplitude_half_hz', '{:.2g}')} | {v('stop_force_max_N', '{:.0f}')} | "
            f"{v('stop_engaged_s', '{:.2f}')} | {v('heel_peak_N', '{:.0f}')} | {v('toe_peak_N', '{:.0f}')} | "
            f"{v('heel_strike_knee_deg', '{:.1f}')} | {v('correlation', '{:.3f}')} | "
            f"{v('peak_knee_flexion_deg', '{:.1f}')} |")


# ---------------------------------------------------------------------------------------------- figures
def _figures(out: Path, sweeps: Mapping[str, list], rows: Mapping[str, list]) -> list[Path]:
    from biobullet.analysis.plots import plot_spectrum_map

    figures = []
    for sub, title in (("k", "knee spectrum vs k, c/k = 0.05 s"),
                       ("k_hiking", "knee spectrum vs k, c/k = 0.05 s, hip hiking × 1.006")):
        pts = [r for r in sweeps[sub] if "spectrum_frequency" in r["result"]]
        if not pts:
            continue
        k, freq, amp = spectrum_matrix(pts)
        figures.append(plot_spectrum_map(k, freq, np.degrees(amp), out / f"spectrum_map_{sub}.png",
                                         title=title + " (amplitude, deg)", floor=1e-4))
    fig_rows = [(sub, r) for sub in ("k", "k_hiking") for r in sweeps[sub] if _res(r, "poincare_knee_deg")]
    if fig_rows:
        figures.append(_bifurcation(out / "bifurcation.png", sweeps))
    figures.append(_period_plot(out / "period_vs_k.png", rows))
    figures.append(_rho_peak_plot(out / "rho_peak_vs_k.png", rows))
    if any(_has_evidence(r) for sub in ("k", "k_hiking") for r in sweeps[sub]):
        figures.append(_evidence_plot(out / "evidence.png", sweeps))
    return figures


def _figure(size):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _save(fig, path: Path) -> Path:
    return atomic.save_figure(fig, path, dpi=110)


def _bifurcation(path: Path, sweeps) -> Path:
    fig = _figure((11, 4.2))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, sub, title in zip(axes, ("k", "k_hiking"), ("c/k = 0.05", "c/k = 0.05, hip hiking")):
        for r in sweeps[sub]:
            s = _res(r, "poincare_knee_deg")
            if s:
                s = np.asarray(s[-N_LAST_POINCARE:], dtype=float)
                ax.plot(np.full(len(s), r["params"]["damper.stiffness"]), s, ".", color="k", ms=3)
        ax.set(xlabel="damper stiffness k (N/m)", title=f"Poincaré: knee at t = nT, last {N_LAST_POINCARE} cycles, "
                                                          f"{title}")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("knee flexion at t = nT (deg)")
    return _save(fig, path)


def _period_plot(path: Path, rows) -> Path:
    fig = _figure((7, 4))
    ax = fig.subplots()
    for sub, marker, label in (("k", "o", "c/k 0.05"), ("k_hiking", "s", "c/k 0.05, hiking")):
        sel = sorted(rows[sub], key=lambda r: r["k"])
        ax.plot([r["k"] for r in sel], [r["period"] or 0 for r in sel], marker + "-", label=f"{label}: Poincaré")
        ax.plot([r["k"] for r in sel], [r["spectral_period"] or 0 for r in sel], marker, mfc="none", ms=9,
                label=f"{label}: spectral")
    for ratio in sorted({r["ratio"] for r in rows["critical_k"]}):
        sel = sorted(_by(rows["critical_k"], ratio), key=lambda r: r["k"])
        ax.plot([r["k"] for r in sel], [r["period"] or 0 for r in sel], "x--", label=f"c/k {ratio:g}: Poincaré")
    ax.set_yticks(range(0, 7), ["none", "1", "2", "3", "4", "5", "6"])
    ax.set(xlabel="damper stiffness k (N/m)", ylabel="period (× T)", title="period per k (none = irregular)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    return _save(fig, path)


def _rho_peak_plot(path: Path, rows) -> Path:
    fig = _figure((11, 4))
    axes = fig.subplots(1, 2)
    groups = {}
    for r in list(rows["k"]) + list(rows["critical_k"]) + list(rows["k_hiking"]):
        groups.setdefault((r["ratio"], r["hiking"]), []).append(r)
    for (ratio, hiking), sel in sorted(groups.items()):
        sel.sort(key=lambda r: r["k"])
        label = f"c/k {ratio:g}" + (f", hiking ×{hiking:g}" if hiking != 1.0 else "")
        ks = [r["k"] for r in sel]
        axes[0].plot(ks, [r["correlation"] for r in sel], "o-", ms=3, label=label)
        line, = axes[1].plot(ks, [r["peak_knee_flexion_deg"] for r in sel], "o-", ms=3, label=label)
        bad = [r for r in sel if r["period"] != 1]
        axes[1].plot([r["k"] for r in bad], [r["peak_knee_flexion_deg"] for r in bad], "x", color=line.get_color(),
                     ms=8)
    axes[0].set(xlabel="k (N/m)", ylabel="ρ (cycles 15–20)", title="gait correlation ρ")
    axes[1].set(xlabel="k (N/m)", ylabel="peak knee flexion (deg, last 5 cycles)",
                title="peak knee flexion (× = not period 1)")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)


def _evidence_plot(path: Path, sweeps) -> Path:
    fig = _figure((12, 8))
    axes = fig.subplots(2, 2).ravel()
    for sub, color, label, dx in (("k", "C0", "c/k 0.05", -60.0), ("k_hiking", "C3", "hiking ×1.006", 60.0)):
        pts = [r for r in sweeps[sub] if _has_evidence(r)]
        if not pts:
            continue

        def per_cycle(ax, key, fmt, lab, offset=0.0):
            for i, r in enumerate(pts):
                vals = [v for v in _res(r, key) if v is not None]
                ax.plot(np.full(len(vals), r["params"]["damper.stiffness"] + dx + offset), vals, fmt, color=color,
                        ms=4, mfc="none" if fmt == "o" else color, label=lab if i == 0 else None)

        per_cycle(axes[0], "stop_force_max_per_cycle_N", ".", label)
        per_cycle(axes[1], "stop_engaged_per_cycle_s", ".", label)
        per_cycle(axes[2], "heel_peak_per_cycle_N", "o", f"{label}: heel")
        per_cycle(axes[2], "toe_peak_per_cycle_N", "^", f"{label}: toe")
        per_cycle(axes[3], "heel_strike_knee_per_cycle_deg", "o", f"{label}: at heel-force onset")
        for i, r in enumerate(pts):
            s = np.asarray(_res(r, "poincare_knee_deg")[-len(_res(r, "evidence_cycles")):], dtype=float)
            axes[3].plot(np.full(len(s), r["params"]["damper.stiffness"] + dx), s, "x", color=color, ms=4,
                         label=f"{label}: at t = nT (data heel strike)" if i == 0 else None)
    axes[0].set(ylabel="max knee-stop force per cycle (N)", title="hyperextension stop: peak force")
    axes[1].set(ylabel="stop engaged per cycle (s, F > 1 N)", title="hyperextension stop: engagement time")
    axes[2].set(ylabel="peak normal force per cycle (N)", title="heel / toe contact peaks")
    axes[3].set(ylabel="knee flexion (deg)", title="knee angle at heel strike")
    for ax in axes:
        ax.set_xlabel("damper stiffness k (N/m)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    return _save(fig, path)
