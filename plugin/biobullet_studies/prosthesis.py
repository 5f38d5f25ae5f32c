"""Paper 003 (Lü et al. 2020): hip-driven transfemoral prosthesis with a four-bar knee — gait study.

`biobullet run prosthesis`: 20 gait cycles of urdf/prosthesis_fourbar.urdf (hip x, hip y, thigh angle prescribed
by the substitute gait data; treadmill belt frame; heel/toe Kelvin–Voigt contact; hydraulic damper along BD;
hyperextension stop; ankle spring tracking the reference ankle angle), analysis of the last 5 cycles: knee angle
vs reference, ICR path, contact forces, period (Poincaré) and spectrum, energy/work bookkeeping, loop residual,
3D video. The sweep point function `gait(params)` (registered as "prosthesis.gait") runs one parameter point.

Numerics: the special-purpose RHS `prosthesis_model.FastProsthesis.rhs` (its one kernel, prosthesis_kernel.py; same
equations as the general engine, checked against it in tests/validation/test_prosthesis_model.py), LSODA via odeint (the paper's
friction regularisation C2 = 1e4 s/m, v0 = 1e-4 m/s, makes the ODE stiff during stance; kept), rtol 1e-6,
atol 1e-8. One 20-cycle run: ~10 s on one core.
"""
from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from biobullet.sweep.schema import Param, point_function
from biobullet_studies.common import bundled_model, say, write_json
from biobullet_studies.prosthesis_model import FastProsthesis, Parameters

MODEL = "prosthesis_fourbar.urdf"
PERIOD = 1.0          # s, gait cycle of the substitute data
RTOL, ATOL = 1e-6, 1e-8
SAMPLES_PER_CYCLE = 200


def build(stiffness: float = 1.6e4, ratio: float = 0.05, hip_hiking: float = 1.0, **overrides) -> FastProsthesis:
    """Fast model with damper k (N/m), c = ratio·k (N s/m) and hip_y × hip_hiking."""
    params = Parameters(damper_k=float(stiffness), damper_c=float(ratio) * float(stiffness), **overrides)
    return FastProsthesis(bundled_model(MODEL), params, hip_y_scale=hip_hiking)


def simulate_cycles(fast: FastProsthesis, cycles: float = 20, *, samples_per_cycle: int = SAMPLES_PER_CYCLE,
                    rtol: float = RTOL, atol: float = ATOL, details: bool = True, work: bool | None = None) -> dict:
    """Integrate from rest at full extension; returns sampled states and derived signals.

    LSODA (ODEPACK via scipy.integrate.odeint: no per-step Python overhead besides the RHS) on the plain-float
    RHS `FastProsthesis.rhs`; the work integrals W_drive, W_forces are extra states only when `work`
    (default: = details) — they would otherwise enlarge every finite-difference Jacobian by 2 columns."""
    from scipy.integrate import odeint

    work = details if work is None else work
    t_end = cycles * PERIOD
    t_eval = np.linspace(0.0, t_end, int(round(cycles * samples_per_cycle)) + 1)
    fast.nfev = 0
    started = time.perf_counter()
    n = 6 if work else 4
    func = (lambda t, y: fast.rhs(t, y, True)) if work else fast.rhs
    y, info = odeint(func, np.zeros(n), t_eval, tfirst=True, rtol=rtol, atol=atol, mxstep=500000,
                     full_output=True)
    wall = time.perf_counter() - started
    if info["message"] != "Integration successful.":
        raise RuntimeError(f"prosthesis integration failed: {info['message']}")
    if not work:
        y = np.hstack([y, np.full((len(t_eval), 2), np.nan)])
    out = {"t": t_eval, "y": y, "wall_time": wall, "nfev": fast.nfev, "steps": int(info["nst"][-1])}
    if not details:
        out["knee"] = np.array([fast.knee_flexion(t, yy) for t, yy in zip(t_eval, y)])
        return out
    rows = [fast.details(t, yy) for t, yy in zip(t_eval, y)]
    out["knee"] = np.array([r["knee_flexion"] for r in rows])
    out["forces"] = np.array([[f[0] for f in r["forces"]] + [f[1] for f in r["forces"]] for r in rows])
    out["penetration"] = np.array([[f[2] for f in r["forces"]] for r in rows])
    out["residual"] = np.array([float(np.max(np.abs(r["residual"]))) for r in rows])
    out["energy"] = np.array([r["kinetic"] + r["gravity"] for r in rows])
    out["icr"] = np.array([_icr(r) for r in rows])
    out["psi"] = np.array([r["psi"] for r in rows])
    out["stop_force"] = np.array([r["stop_force"] for r in rows])
    out["rows"] = rows
    return out


def _icr(r: Mapping[str, Any]) -> tuple[float, float]:
    """ICR of the shank relative to the thigh (lines AD and BC), in the thigh frame relative to A (m)."""
    A, B, C, D = r["A"], r["B"], r["C"], r["D"]
    d1, d2 = D - A, C - B
    mat = np.array([d1, -d2]).T
    if abs(np.linalg.det(mat)) < 1e-14:
        return (math.nan, math.nan)
    s = np.linalg.solve(mat, B - A)[0]
    p = s * d1
    pt = r["psi"][0]
    c, sn = math.cos(pt), math.sin(pt)  # back to the thigh frame: R(ψ_t)ᵀ p
    return (c * p[0] - sn * p[1], sn * p[0] + c * p[1])


def analyse(t: np.ndarray, knee: np.ndarray, *, cycles: float = 20) -> dict:
    """Period, spectrum, correlation and peak knee flexion of the knee signal (paper 003 protocol)."""
    from biobullet_studies.gait_metrics import peak_knee_flexion_per_cycle
    from biobullet.analysis.poincare import classify_trajectory
    from biobullet.analysis.spectrum import amplitude_spectrum, subharmonic_amplitudes, subharmonic_content
    from biobullet_studies.gait import load_gait

    gait = load_gait("walking_1ms")
    reference = gait.evaluate("knee", t)
    try:
        period_info = classify_trajectory(t, knee, PERIOD, n_last=min(12, int(cycles) + 1))
    except ValueError:      # too few cycles for a period verdict (short test runs)
        period_info = None
    if cycles >= 6:
        freq, amp = amplitude_spectrum(t, knee, PERIOD)  # freq in units of 1/T (T = 1 s: Hz)
    else:   # short (test) runs: plain DFT of the last whole cycle(s)
        n_per = int(round(1.0 / (t[1] - t[0]) * PERIOD))
        n_win = n_per * max(int(cycles), 1)
        seg = knee[-n_win - 1:-1]
        amp = np.abs(np.fft.rfft(seg)) * 2.0 / len(seg)
        amp[0] /= 2.0
        freq = np.fft.rfftfreq(len(seg), d=float(t[1] - t[0]))
    sub = subharmonic_amplitudes(freq, amp)
    corr = _correlation(t, knee, reference)
    peaks = np.asarray(peak_knee_flexion_per_cycle(t, knee, PERIOD).value, dtype=float)
    last = peaks[-5:] if len(peaks) >= 5 else peaks
    return {"period": period_info, 
            "correlation": corr, "peak_knee_flexion_deg": float(np.degrees(np.mean(last))),
            "peak_knee_flexion_range_deg": float(np.degrees(np.ptp(last))),
            "reference_peak_knee_flexion_deg": float(np.degrees(np.max(reference))),
            "subharmonic_content": float(subharmonic_content(freq, amp)),
            "subharmonics": _jsonable(sub),
            "amplitude_1hz": float(np.interp(1.0, freq, amp)), "amplitude_2hz": float(np.interp(2.0, freq, amp)),
            "amplitude_half_hz": float(np.interp(0.5, freq, amp)),
            "amplitude_third_hz": float(np.interp(1.0 / 3.0, freq, amp)),
            "spectrum": {"frequency": freq, "amplitude": amp}}


def _correlation(t, knee, reference) -> float:
    """Pearson ρ of simulated and reference knee angle over cycles 15–20 (paper 003 eq. 23)."""
    mask = (t >= 15 * PERIOD - 1e-12) & (t <= 20 * PERIOD + 1e-12)
    x, y = knee[mask], reference[mask]
    if len(x) < 3:
        return math.nan
    return float(np.corrcoef(x, y)[0, 1])


def _jsonable(value):
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    if hasattr(value, "__dict__"):
        return _jsonable(vars(value))
    return value


#: result keys added by `cycle_evidence` (lists: one entry per analysed cycle, oldest first)
EVIDENCE_KEYS = (
    "poincare_knee_deg",            # knee flexion at t = nT, n = 0 … cycles (deg); t = 0 is the data's heel strike
    "evidence_cycles",              # indices n of the analysed cycles [nT, (n+1)T)
    "stop_force_max_per_cycle_N",   # max knee (hyperextension) stop force per cycle (N)
    "stop_engaged_per_cycle_s",     # time per cycle with stop force > STOP_ENGAGED_N (s, sample resolution T/200)
    "heel_peak_per_cycle_N", "toe_peak_per_cycle_N",   # peak normal contact force per cycle (N)
    "heel_strike_phase_per_cycle",  # phase t/T − n of heel-force onset (> CONTACT_ON_N) in the cycle (NaN → None)
    "heel_strike_knee_per_cycle_deg",  # knee flexion at that onset (deg)
    "stop_force_max_N", "stop_engaged_s", "heel_peak_N", "toe_peak_N",      # max / mean / max / max over them
    "heel_strike_knee_deg", "heel_strike_knee_range_deg",                  # mean and peak-to-peak over them
)
EVIDENCE_CYCLES = 6
STOP_ENGAGED_N = 1.0
CONTACT_ON_N = 1.0


# ---------------------------------------------------------------------------------------------- sweep point
@point_function(
    params={
        "damper.stiffness": Param("float", minimum=1e3, maximum=1e5, unit="N/m", doc="hydraulic damper k"),
        "damper.ratio": Param("float", minimum=0.0, maximum=1.0, default=0.05, unit="s", doc="c/k"),
        "hip_hiking": Param("float", minimum=0.9, maximum=1.1, default=1.0, doc="hip_y scale (paper: 1.006)"),
        "cycles": Param("int", minimum=8, maximum=100, default=20),
    },
    results=("period", "peak_knee_flexion_deg", "correlation", "subharmonic_content", "amplitude_half_hz",
             "amplitude_third_hz", "amplitude_1hz", "spectrum_frequency", "spectrum_amplitude", "wall_time",
             *EVIDENCE_KEYS),
    name="prosthesis.gait",
)
def gait(params: Mapping[str, float]) -> dict[str, Any]:
    """One gait run (20 cycles, last 5 analysed): period, peak knee flexion, correlation, spectrum, evidence.

    Results: period (Poincaré, None = no period ≤ 6 found), peak_knee_flexion_deg, correlation (ρ, cycles
    15–20), subharmonic_content, amplitude_{half,third,1}_hz, spectrum_frequency/amplitude (f·T ≤ 3, window
    6T, rad), wall_time; plus the evidence keys of `cycle_evidence` (Poincaré knee samples, knee-stop force
    and engagement, heel/toe peak forces, knee angle at heel strike, per cycle over the last cycles)."""
    fast = build(params["damper.stiffness"], params.get("damper.ratio", 0.05), params.get("hip_hiking", 1.0))
    cycles = int(params.get("cycles", 20))
    run = simulate_cycles(fast, cycles, details=False)
    if params.get("save"):
        np.savez(str(params["save"]), t=run["t"], y=run["y"], knee=run["knee"])
    res = analyse(run["t"], run["knee"], cycles=cycles)
    spec = res.pop("spectrum")
    keep = spec["frequency"] <= 3.0
    return {**{k: res[k] for k in ("period", "peak_knee_flexion_deg", "correlation", "subharmonic_content",
                                   "amplitude_half_hz", "amplitude_third_hz", "amplitude_1hz")},
            "spectrum_frequency": spec["frequency"][keep].tolist(),
            "spectrum_amplitude": spec["amplitude"][keep].tolist(), "wall_time": run["wall_time"],
            **cycle_evidence(fast, run["t"], run["y"], run["knee"], cycles=cycles)}



def cycle_evidence(fast: FastProsthesis, t: np.ndarray, y: np.ndarray, knee: np.ndarray, *, cycles: int,
                   n_cycles: int = EVIDENCE_CYCLES) -> dict[str, Any]:
    """Mechanism evidence over the last `n_cycles` whole cycles (details evaluated only there).

    Heel strike = the first rising crossing of the heel normal force through CONTACT_ON_N N whose time lies
    in [nT − T/4, (n+1)T − T/4) (the data's heel strike is at phase 0; the window tolerates early strikes)."""
    spc = int(round((len(t) - 1) / cycles))
    n_last = min(int(n_cycles), int(cycles))
    first = int(cycles) - n_last
    lo = max(first * spc - spc // 4, 0)
    idx = np.arange(lo, int(cycles) * spc + 1)
    rows = [fast.details(t[i], y[i]) for i in idx]
    tt = t[idx]
    heel = np.array([r["forces"][0][0] for r in rows])
    toe = np.array([r["forces"][1][0] for r in rows])
    stop = np.array([r["stop_force"] for r in rows])
    kk = knee[idx]
    dt = float(t[1] - t[0])
    onset = np.flatnonzero((heel[1:] > CONTACT_ON_N) & (heel[:-1] <= CONTACT_ON_N)) + 1
    out: dict[str, Any] = {key: [] for key in EVIDENCE_KEYS[1:8]}
    for n in range(first, int(cycles)):
        in_cycle = (tt >= n * PERIOD - 1e-9) & (tt < (n + 1) * PERIOD - 1e-9)
        out["evidence_cycles"].append(n)
        out["stop_force_max_per_cycle_N"].append(float(np.max(stop[in_cycle])))
        out["stop_engaged_per_cycle_s"].append(float(np.count_nonzero(stop[in_cycle] > STOP_ENGAGED_N) * dt))
        out["heel_peak_per_cycle_N"].append(float(np.max(heel[in_cycle])))
        out["toe_peak_per_cycle_N"].append(float(np.max(toe[in_cycle])))
        hits = [j for j in onset if (n - 0.25) * PERIOD - 1e-9 <= tt[j] < (n + 0.75) * PERIOD - 1e-9]
        if hits:
            j = hits[0]
            out["heel_strike_phase_per_cycle"].append(float(tt[j] / PERIOD - n))
            out["heel_strike_knee_per_cycle_deg"].append(float(np.degrees(kk[j])))
        else:
            out["heel_strike_phase_per_cycle"].append(None)
            out["heel_strike_knee_per_cycle_deg"].append(None)
    strikes = [v for v in out["heel_strike_knee_per_cycle_deg"] if v is not None]
    out.update({
        "poincare_knee_deg": [float(np.degrees(knee[n * spc])) for n in range(int(cycles) + 1)],
        "stop_force_max_N": max(out["stop_force_max_per_cycle_N"]),
        "stop_engaged_s": float(np.mean(out["stop_engaged_per_cycle_s"])),
        "heel_peak_N": max(out["heel_peak_per_cycle_N"]), "toe_peak_N": max(out["toe_peak_per_cycle_N"]),
        "heel_strike_knee_deg": float(np.mean(strikes)) if strikes else None,
        "heel_strike_knee_range_deg": float(np.ptp(strikes)) if strikes else None,
    })
    return out


# ---------------------------------------------------------------------------------------------- scenario
def run(out_dir: str, *, stiffness: float = 1.6e4, ratio: float = 0.05, hip_hiking: float = 1.0,
        cycles: int = 20, video: bool = True, **_: Any) -> dict:
    """The study run; writes plots, video and summary.json into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    say(f"prosthesis: {cycles} cycles, k = {stiffness:g} N/m, c/k = {ratio:g} s, hip hiking × {hip_hiking:g}")
    fast = build(stiffness, ratio, hip_hiking)
    sim = simulate_cycles(fast, cycles)
    t, knee = sim["t"], sim["knee"]
    res = analyse(t, knee, cycles=cycles)
    last = t >= (cycles - 5) * PERIOD - 1e-12
    forces = sim["forces"]
    # energy/work bookkeeping of the response bodies: ΔE = W_drive + W_forces (both integrated in the ODE)
    w_drive, w_forces = sim["y"][:, 4], sim["y"][:, 5]
    delta_e = sim["energy"] - sim["energy"][0]
    closure = float(np.max(np.abs(delta_e - w_drive - w_forces)))
    scale = float(max(np.max(np.abs(w_drive)), np.max(np.abs(w_forces)), 1e-12))
    summary = {
        "scenario": "prosthesis", "paper": "003 (Lü et al. 2020)", "model": MODEL,
        "substitute_data": "geometry, masses, gait: substitutes (urdf/README.md, biobullet_studies.gait walking_1ms)",
        "simulated_seconds": cycles * PERIOD,
        "damper_stiffness": stiffness, "damper_ratio": ratio, "hip_hiking": hip_hiking, "cycles": cycles,
        "period_cycles": res["period"], "correlation": res["correlation"],
        "peak_knee_flexion_deg": res["peak_knee_flexion_deg"],
        "reference_peak_knee_flexion_deg": res["reference_peak_knee_flexion_deg"],
        "subharmonic_content": res["subharmonic_content"],
        "amplitude_half_hz": res["amplitude_half_hz"], "amplitude_third_hz": res["amplitude_third_hz"],
        "amplitude_1hz": res["amplitude_1hz"],
        "max_loop_residual_m": float(np.max(sim["residual"])),
        "min_normal_force_N": float(np.min(forces[:, :2])),
        "peak_normal_force_N": float(np.max(forces[last][:, :2].sum(axis=1))),
        "friction_opposes_slip": bool(_friction_opposes(sim)),
        "energy_closure_J": closure, "energy_closure_relative": closure / scale,
        "work_drive_J": float(w_drive[-1]), "work_forces_J": float(w_forces[-1]),
        "wall_time_s": sim["wall_time"], "nfev": sim["nfev"],
    }
    try:
        _plots(out, sim, res, cycles)
    except ImportError as exc:  # matplotlib missing: numbers are still in summary.json / series.npz
        summary["plots_error"] = str(exc)
    last_t = sim["t"] >= (cycles - 5) * PERIOD - 1e-12
    ph = (sim["t"] % PERIOD) / PERIOD
    heel_on = ph[last_t][sim["forces"][last_t, 0] > 1.0]
    toe_on = ph[last_t][sim["forces"][last_t, 1] > 1.0]
    summary.update({
        "heel_loaded_phase_min": float(heel_on.min()) if len(heel_on) else None,
        "heel_peak_penetration_mm": float(1e3 * np.max(sim["penetration"][last_t, 0])),
        "toe_last_loaded_phase": float(toe_on.max()) if len(toe_on) else None,
        "min_knee_flexion_deg": float(np.degrees(np.min(sim["knee"][last_t]))),
        "max_stop_force_N": float(np.max(sim["stop_force"][last_t])),
    })
    np.savez(out / "series.npz", t=sim["t"], knee=sim["knee"], forces=sim["forces"], icr=sim["icr"],
             penetration=sim["penetration"], energy=sim["energy"], work=sim["y"][:, 4:6])
    if video:
        try:
            summary["video"] = _video(out, fast, sim, cycles)
        except Exception as exc:  # noqa: BLE001  (no video backend: the study itself is still valid)
            summary["video_error"] = str(exc)
    write_json(out / "summary.json", summary)
    say(f"prosthesis: period {res['period']}T, ρ = {res['correlation']:.4f}, peak knee "
        f"{res['peak_knee_flexion_deg']:.1f}°, loop residual {summary['max_loop_residual_m']:.1e} m, "
        f"{sim['wall_time']:.1f} s")
    return summary


def _friction_opposes(sim) -> bool:
    rows = sim["rows"]
    ok = True
    for r in rows:
        for fn, ft, _, slip in r["forces"]:
            if ft * slip > 1e-12:
                ok = False
    return ok


def _plots(out: Path, sim, res, cycles) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from biobullet_studies.gait import load_gait
    from biobullet_studies.common import save_figure

    t = sim["t"]
    last = t >= (cycles - 5) * PERIOD - 1e-12
    ref = load_gait("walking_1ms").evaluate("knee", t)
    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    ax = axes[0, 0]
    ax.plot(t[last], np.degrees(sim["knee"][last]), label="prosthesis (simulated)")
    ax.plot(t[last], np.degrees(ref[last]), "--", label="reference (substitute gait data)")
    ax.set_xlabel("t (s)"); ax.set_ylabel("knee flexion (deg)"); ax.legend(); ax.set_title("knee angle, last 5 cycles")
    ax = axes[0, 1]
    icr = sim["icr"][last] * 1000
    ax.plot(icr[:, 0], icr[:, 1], ".", ms=2)
    ax.set_xlabel("x (mm, thigh frame, from A)"); ax.set_ylabel("z (mm)"); ax.set_title("ICR path (J-curve)")
    ax.set_xlim(-150, 150); ax.set_ylim(-100, 400)
    ax = axes[1, 0]
    f = sim["forces"][last]
    for k, name in enumerate(("heel N", "toe N", "heel T", "toe T")):
        ax.plot(t[last], f[:, k], label=name)
    ax.set_xlabel("t (s)"); ax.set_ylabel("force (N)"); ax.legend(); ax.set_title("contact forces")
    ax = axes[1, 1]
    spec = res["spectrum"]
    ax.plot(spec["frequency"], np.degrees(spec["amplitude"]))
    ax.set_xlim(0, 4); ax.set_xlabel("f (Hz)"); ax.set_ylabel("amplitude (deg)"); ax.set_title("knee spectrum")
    fig.tight_layout()
    save_figure(fig, out / "prosthesis.png")
    plt.close(fig)


#: the video's panel (portrait: a leg is tall), its frame rate, and the view: from the side (the model's y axis is
#: lateral, z up), a little from the front and ~30° above, so the gait's sagittal motion spreads across the panel
VIDEO_SIZE = (480, 720)
VIDEO_VIEW = (0.3, 1.0, 0.6)
VIDEO_MARGIN = 1.03   # the leg is slender: a tight fit keeps it large in the panel
VIDEO_FPS = 25


def video_frames(fast: FastProsthesis, sim, cycles, *, fps: float = VIDEO_FPS, size: tuple[int, int] = VIDEO_SIZE,
                 **options) -> list[np.ndarray]:
    """Frames of the last 2 cycles replayed in PyBullet (lab frame: treadmill joint at 0, the belt runs under the
    foot), seen from the side (VIDEO_VIEW) with the camera fitted to the leg's whole motion (`render.fit_camera`);
    `options` go to `render_frames` (e.g. shadows, hide_model)."""
    from types import SimpleNamespace

    from biobullet.loader import load_model
    from biobullet.render import fit_camera, motion_points, render_frames

    model = load_model(bundled_model(MODEL))
    t = sim["t"]
    pick = t >= (cycles - 2) * PERIOD - 1e-12
    positions = []
    for tk, y in zip(t[pick], sim["y"][pick]):
        ang = fast.joint_angles(tk, y[0], y[1])
        hx = fast.f_hx.evaluate(None, tk)[0]
        hy = fast.f_hy.evaluate(None, tk)[0]
        values = {"treadmill": 0.0, "hip_x": hx, "hip_y": hy, **ang}
        positions.append([values[name] for name in model.joint_names])
    traj = SimpleNamespace(t=t[pick] - t[pick][0], positions=np.array(positions))
    camera = fit_camera(motion_points(model, traj), model.gravity, aspect=size[0] / size[1], direction=VIDEO_VIEW,
                        margin=VIDEO_MARGIN)
    return render_frames(model, traj, width=size[0], height=size[1], fps=fps, camera=camera,
                         title="prosthesis, last 2 gait cycles", **options)


def _video(out: Path, fast: FastProsthesis, sim, cycles) -> str:
    from biobullet.render import write_video
    return str(write_video(video_frames(fast, sim, cycles), out / "prosthesis.mp4", fps=VIDEO_FPS))
