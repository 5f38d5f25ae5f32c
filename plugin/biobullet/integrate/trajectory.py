"""Trajectory: the sampled result of a simulation, with energy bookkeeping, CSV and NPZ files.

Columns: `positions` (n_t × n_config) are EVERY tree coordinate x = [base pose (base_x … base_qw)?, θ in URDF
joint order] named `position_names`; `velocities` (n_t × n_tangent) are ẋ = [base twist (base_vx … base_wz,
base frame)?, θ̇] named `velocity_names` (joint rates are named `<joint>_dot`). `q`, `v` are the generalized
(independent) coordinates. CSV header (DESIGN.md): `t`, position names, velocity names, then with muscles one
column per muscle record and muscle, named `<muscle>:<record>` (e.g. `BRA:activation`, `BRA:tendon_force`).
"""
from __future__ import annotations

import csv
import json
import os
import warnings
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from biobullet.core.atomic import atomic_write  # noqa: F401  (also imported from here by older callers)
from biobullet.core.errors import ModelError, did_you_mean, shown

#: largest trajectory file read (bytes; an .npz: once decompressed), and longest CSV header line (characters):
#: trajectory files come from strangers too
MAX_FILE_BYTES = 1024 * 1024 * 1024
MAX_HEADER_CHARS = 4 * 1024 * 1024
ENERGY_KEYS = ("kinetic", "potential_gravity", "potential_elastic", "work_applied", "dissipated")


@dataclass
class Trajectory:
    """Samples of one simulation. Times in s; SI units; energies in J."""

    t: np.ndarray
    position_names: tuple[str, ...]
    velocity_names: tuple[str, ...]
    positions: np.ndarray
    velocities: np.ndarray
    q: np.ndarray | None = None
    v: np.ndarray | None = None
    coordinate_names: tuple[str, ...] = ()
    multipliers: np.ndarray | None = None
    energy: dict[str, np.ndarray] = field(default_factory=dict)
    events: list[tuple[str, float, np.ndarray]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    model: Any = field(default=None, repr=False, compare=False)
    #: with muscles in the run: per-muscle samples (n_t × n_muscles) by `muscles.dynamics.MUSCLE_OUTPUTS` key,
    #: "activation" and "tendon_energy" (J)
    muscles: dict[str, np.ndarray] = field(default_factory=dict)
    #: the muscles' names: the columns of every `muscles` array
    muscle_names: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.t)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The names of the `positions` columns, in order (DESIGN.md: one column per joint coordinate): a floating
        base's or multi-DOF joint's pose columns (base_x … base_qw, <joint>_qx …) first, then the URDF joint
        names of θ — so `dict(zip(trajectory.joint_names, trajectory.positions[k]))` is the state at sample k.
        `model.joint_names` is θ alone."""
        return self.position_names

    # ------------------------------------------------------------------ derived quantities
    def column(self, name: str) -> np.ndarray:
        """One column by name: a position name, a velocity name (`<joint>_dot`), `t`, or a muscle record
        `<muscle>:<record>` (e.g. `BRA:activation`)."""
        if not isinstance(name, str):
            raise KeyError(f"a column name is text, not {type(name).__name__}: {name!r:.40}")
        if name == "t":
            return self.t
        if name in self.position_names:
            return self.positions[:, self.position_names.index(name)]
        if name in self.velocity_names:
            return self.velocities[:, self.velocity_names.index(name)]
        muscle, _, record = name.rpartition(":")
        if muscle in self.muscle_names and record in self.muscles:
            return self.muscles[record][:, self.muscle_names.index(muscle)]
        raise KeyError(f"{name!r} is not a column{did_you_mean(name, tuple(self.csv_header()))}")

    # ------------------------------------------------------------------ display
    def plot(self, columns=None, path: str | os.PathLike[str] | None = None):
        """A matplotlib Figure of `columns` (names as in `column`; default the generalized coordinates, else every
        joint) against time, with the energy record (J) in a second panel when there is one. With `path`, also
        written there atomically (format from the suffix: .png, .pdf, .svg). Returns the Figure."""
        from matplotlib.figure import Figure   # no pyplot: no global state, works headless

        if isinstance(columns, str):   # one name (list("knee") was the columns 'k', 'n', 'e', 'e')
            columns = [columns]
        names = list(columns) if columns is not None else list(self.coordinate_names or self.position_names)
        if columns is not None and not names:   # was an empty figure and matplotlib's "No artists" warning
            raise ModelError("columns is empty: nothing to plot", attribute="columns",
                             expected=f"column names, e.g. {', '.join((self.coordinate_names or ('t',))[:3])}")
        for name in names:
            self.column(name)   # KeyError naming the column (with the nearest name) before drawing anything
        panels = 2 if self.energy else 1
        figure = Figure(figsize=(8, 3.2 * panels), layout="constrained")
        axes = figure.subplots(panels, 1, sharex=True, squeeze=False)[:, 0]
        for name in names:
            axes[0].plot(self.t, self.column(name), label=name)
        axes[0].set_ylabel("position (rad or m)" if not any(n.endswith("_dot") for n in names) else "value (SI)")
        axes[0].legend(loc="best", fontsize="small")
        axes[0].grid(alpha=0.3)
        if self.energy:
            for key in ("kinetic", "potential_gravity", "potential_elastic"):
                axes[1].plot(self.t, self.energy[key], label=key.replace("_", " "))
            axes[1].plot(self.t, self._balance(), "k--", label="balance (not constant: time-driven joints do work)"
                         if self.time_driven_joints() else "balance (constant if correct)")
            axes[1].set_ylabel("energy (J)")
            axes[1].legend(loc="best", fontsize="small")
            axes[1].grid(alpha=0.3)
        axes[-1].set_xlabel("t (s)")
        if path is not None:
            from biobullet.core.atomic import figure_format
            suffix = figure_format(figure, path) or "png"
            atomic_write(path, lambda tmp: figure.savefig(tmp, format=suffix, dpi=120))
        return figure

    def _repr_html_(self) -> str:
        """Jupyter's view: samples, time span, columns and which right-hand side served."""
        from html import escape
        rows = [("samples", f"{len(self.t)}, t = {self.t[0]:.6g} … {self.t[-1]:.6g} s" if len(self.t) else "0"),
                ("coordinates", ", ".join(self.coordinate_names) or "-"),
                ("joints", ", ".join(self.joint_names) or "-"), ("events", str(len(self.events)))]
        if self.energy and len(self.t):
            balance = self._balance()
            driven = " (time-driven joints do work: not constant)" if self.time_driven_joints() else ""
            rows.append(("energy balance drift", f"{float(np.max(np.abs(balance - balance[0]))):.3g} J{driven}"))
        if "right_hand_side" in self.meta:
            rows.append(("right-hand side", str(self.meta["right_hand_side"])))
        body = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td style='text-align:left'>{escape(v)}"
                       "</td></tr>" for k, v in rows)
        return f"<b>biobullet Trajectory</b> (<code>.plot()</code> draws it)<table>{body}</table>"

    def energy_balance(self) -> np.ndarray:
        """T + V_gravity + V_elastic − W_applied + E_dissipated (J): constant for a correct simulation of a
        model whose joint functions do not depend on time. A time driver (a `fourier` function, an expression in
        t) does work the record does not hold, and a piecewise-linear function's joint changes its rate at each
        knot without an impact: a UserWarning names those joints."""
        driven, kinked = self.time_driven_joints(), self.kinked_joints()
        if driven:
            warnings.warn(f"{self.meta.get('model', 'this model')}: joints {', '.join(driven)} are driven by time: "
                          "their drive does work the energy record does not hold, so the balance is not constant",
                          stacklevel=2)
        if kinked:
            warnings.warn(f"{self.meta.get('model', 'this model')}: joints {', '.join(kinked)} follow piecewise-"
                          "linear functions (degree 1): their rates jump at each knot while the coordinates' "
                          "velocities carry on (no impact is modelled), so the balance jumps where a knot is crossed",
                          stacklevel=2)
        return self._balance()

    def kinked_joints(self) -> tuple[str, ...]:
        """The joints whose function's slope jumps at knots (`JointFunction.kinked`); () without the model."""
        functions = getattr(getattr(self.model, "description", None), "joint_functions", ())
        return tuple(item.joint for item in functions if getattr(item.function, "kinked", False))

    def time_driven_joints(self) -> tuple[str, ...]:
        """The joints whose function depends on t (their drive does work outside the energy record); () without
        the model (a trajectory read from a file)."""
        functions = getattr(getattr(self.model, "description", None), "joint_functions", ())
        return tuple(item.joint for item in functions if getattr(item.function, "uses_time", False))

    def _balance(self) -> np.ndarray:
        if not self.energy:
            raise ValueError("this trajectory carries no energy record")
        e = self.energy
        return (e["kinetic"] + e["potential_gravity"] + e["potential_elastic"] - e["work_applied"]
                + e["dissipated"])

    def total_energy(self) -> np.ndarray:
        """Mechanical energy T + V_gravity + V_elastic (J)."""
        e = self.energy
        return e["kinetic"] + e["potential_gravity"] + e["potential_elastic"]

    def accelerations(self, model=None, *, generalized: bool = False) -> np.ndarray:
        """ẍ (n_t × n_tangent, tree order) — or v̇ (n_t × nv) if `generalized` — recomputed from the equations
        of motion (forces included) at every sample. Needs the model (kept from simulate, or passed)."""
        model = _model_argument(model) if model is not None else self.model
        if model is None:
            raise ModelError("accelerations() needs the model (pass it, or use a trajectory from simulate)",
                             argument="model", expected="a biobullet Model")
        from biobullet.integrate.engine import state_accelerations
        return state_accelerations(model, self, generalized=generalized)

    # ------------------------------------------------------------------ files
    def csv_header(self) -> list[str]:
        return ["t", *self.position_names, *self.velocity_names,
                *(f"{muscle}:{record}" for record in self.muscles for muscle in self.muscle_names)]

    def to_csv(self, path: str | os.PathLike[str]) -> Path:
        """Write `t, positions…, velocities…, <muscle>:<record>…` with 17 significant digits (exact float round
        trip); atomic."""
        path = _path_argument(path)
        header = self.csv_header()
        table = np.column_stack([self.t, self.positions, self.velocities, *self.muscles.values()]) if len(self.t) \
            else np.zeros((0, len(header)))

        def write(tmp: str) -> None:
            with open(tmp, "w", encoding="utf-8", newline="") as handle:   # (not the locale's: names may be any script)
                writer = csv.writer(handle)
                writer.writerow(header)
                # repr() of a Python float is the shortest exact round trip, like '%.17g' but about 3× faster
                # to produce for wide tables (a 3,000-column trajectory took 13 s)
                writer.writerows([[f"{value:.17g}" for value in row] for row in table.tolist()]
                                 if table.shape[1] < 200 else table.tolist())
        atomic_write(path, write)
        return Path(path)

    @classmethod
    def from_csv(cls, path: str | os.PathLike[str], model=None) -> "Trajectory":
        """Read a CSV written by `to_csv` (or the bridge). With `model`, q and v are filled in too.
        Bounded for files from strangers: at most MAX_FILE_BYTES, a header line of at most MAX_HEADER_CHARS."""
        path = _path_argument(path)
        if model is not None:
            _model_argument(model)
        _check_file_size(path, os.path.getsize(path))
        with open(path, encoding="utf-8", newline="") as handle:
            try:
                line = handle.readline(MAX_HEADER_CHARS + 1)
            except UnicodeDecodeError:   # (an .npz or another binary file)
                raise ModelError("not a text file (not UTF-8)", file=str(path),
                                 expected="a biobullet trajectory CSV") from None
            if len(line) > MAX_HEADER_CHARS:
                raise ModelError(f"the header line is over {MAX_HEADER_CHARS} characters", file=str(path),
                                 expected="a biobullet trajectory CSV")
            try:
                header = next(csv.reader([line]), [])
            except csv.Error as exc:
                raise ModelError(f"unreadable header line ({exc})", file=str(path),
                                 expected="a biobullet trajectory CSV") from None
            if not header or header[0] != "t":
                raise ModelError("first column is not 't'", file=str(path), expected="a biobullet trajectory CSV")
            if len(set(header)) != len(header):   # which of the two would a replay draw?
                repeated = next(name for name, count in Counter(header).items() if count > 1)
                raise ModelError(f"the column {shown(repeated)} appears twice in the header", file=str(path),
                                 expected="a biobullet trajectory CSV (one column per name)")
            try:   # numpy's parser: 8 bytes per number (Python lists of floats took ~10× the file's size)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)   # "input contained no data": zero samples
                    data = np.loadtxt(handle, delimiter=",", dtype=float, ndmin=2, comments=None)
            except ValueError as exc:
                raise ModelError(f"bad sample row: {str(exc).split(';')[0]} (rows counted from 0 after the header)",
                                 file=str(path), expected=f"{len(header)} numbers per row") from None
        if data.size == 0:
            data = np.zeros((0, len(header)))
        if data.shape[1] != len(header):
            raise ModelError("a row's length differs from the header's", file=str(path),
                             expected=f"{len(header)} values per row")
        names = header[1:]
        # the muscle records: the trailing `<muscle>:<record>` columns after the velocities
        n_muscle_columns = 0
        while (n_muscle_columns < len(names) and ":" in names[-1 - n_muscle_columns]
               and not names[-1 - n_muscle_columns].endswith("_dot")):
            n_muscle_columns += 1
        muscle_columns = names[len(names) - n_muscle_columns:]
        names = names[:len(names) - n_muscle_columns]
        muscle_names = tuple(dict.fromkeys(column.rpartition(":")[0] for column in muscle_columns))
        muscles = {}
        for k, column in enumerate(muscle_columns):
            muscle, _, record = column.rpartition(":")
            if record not in muscles:
                muscles[record] = np.full((len(data), len(muscle_names)), np.nan)
            muscles[record][:, muscle_names.index(muscle)] = data[:, 1 + len(names) + k]
        first_rate = _first_rate_name(names)
        split = names.index(first_rate) if first_rate in names else len(names)   # no rates: positions only
        position_names, velocity_names = tuple(names[:split]), tuple(names[split:])
        trajectory = cls(t=data[:, 0], position_names=position_names,
                         velocity_names=velocity_names, positions=data[:, 1:1 + len(position_names)],
                         velocities=data[:, 1 + len(position_names):1 + len(names)], meta={"file": str(path)},
                         muscles=muscles, muscle_names=muscle_names)
        if model is not None:
            fill_generalized(trajectory, model)
        return trajectory

    def to_npz(self, path: str | os.PathLike[str]) -> Path:
        """Everything (energy, events, multipliers, meta) in one compressed .npz; exact round trip; atomic."""
        path = _path_argument(path)
        arrays: dict[str, Any] = dict(
            t=self.t, positions=self.positions, velocities=self.velocities,
            position_names=np.array(self.position_names, dtype=str),
            velocity_names=np.array(self.velocity_names, dtype=str),
            coordinate_names=np.array(self.coordinate_names, dtype=str),
            muscle_names=np.array(self.muscle_names, dtype=str),
            event_names=np.array([e[0] for e in self.events], dtype=str),
            event_times=np.array([e[1] for e in self.events], dtype=float),
            meta=np.array(json.dumps(self.meta, default=_json_default)))
        if self.events:
            arrays["event_states"] = np.array([e[2] for e in self.events], dtype=float)
        for key in ("q", "v", "multipliers"):
            if getattr(self, key) is not None:
                arrays[key] = getattr(self, key)
        for key, value in self.energy.items():
            arrays["energy_" + key] = value
        for key, value in self.muscles.items():
            arrays["muscle_" + key] = value

        def write(tmp: str) -> None:
            with open(tmp, "wb") as handle:
                np.savez_compressed(handle, **arrays)
        atomic_write(path, write)
        return Path(path)

    @classmethod
    def from_npz(cls, path: str | os.PathLike[str]) -> "Trajectory":
        """Read a file written by `to_npz`. No pickled objects; at most MAX_FILE_BYTES once decompressed (a
        compressed archive of zeros expands ~1000-fold)."""
        path = _path_argument(path)
        try:
            with zipfile.ZipFile(path) as archive:
                _check_file_size(path, sum(member.file_size for member in archive.infolist()))
        except zipfile.BadZipFile as exc:
            raise ModelError(f"not a .npz archive ({exc})", file=str(path), expected="a file written by to_npz") \
                from None
        try:
            with np.load(path, allow_pickle=False) as data:
                names = lambda key: tuple(str(n) for n in data[key])  # noqa: E731
                states = data["event_states"] if "event_states" in data else []
                events = [(str(n), float(t), np.array(s)) for n, t, s in zip(data["event_names"], data["event_times"],
                                                                              states)]
                return cls(t=data["t"], position_names=names("position_names"),
                           velocity_names=names("velocity_names"), positions=data["positions"],
                           velocities=data["velocities"], q=data["q"] if "q" in data else None,
                           v=data["v"] if "v" in data else None, coordinate_names=names("coordinate_names"),
                           multipliers=data["multipliers"] if "multipliers" in data else None,
                           energy={k[7:]: data[k] for k in data.files if k.startswith("energy_")},
                           events=events, meta=json.loads(str(data["meta"])),
                           muscles={k[7:]: data[k] for k in data.files
                                    if k.startswith("muscle_") and k != "muscle_names"},
                           muscle_names=names("muscle_names") if "muscle_names" in data else ())
        except MemoryError:   # an array header may declare terabytes (NumPy allocates before it reads)
            raise ModelError("an array of the archive declares more data than the file holds", file=str(path),
                             expected="a file written by to_npz") from None


def _path_argument(path) -> str:
    """`path` as a file name (str or os.PathLike of str); else one ModelError naming the argument (None, a number
    or bytes reached open() or zipfile as a TypeError, an integer as a file descriptor)."""
    name = os.fspath(path) if isinstance(path, os.PathLike) else path
    if not isinstance(name, str) or not name:
        raise ModelError(f"is not a file name (got {type(path).__name__} {path!r:.60})", argument="path",
                         expected="a non-empty str or pathlib.Path")
    return name


def _model_argument(model):
    """`model` if it is a biobullet Model; else one ModelError naming the argument."""
    from biobullet.model.model import Model
    if not isinstance(model, Model):
        raise ModelError(f"is not a Model (got {type(model).__name__})", argument="model",
                         expected="a biobullet Model (biobullet.load_model(path))")
    return model


def _check_file_size(path, size: int) -> None:
    if size > MAX_FILE_BYTES:
        raise ModelError(f"the trajectory is over {MAX_FILE_BYTES // 2**20} MiB", file=str(path),
                         expected="a smaller trajectory file (fewer samples)")


def _first_rate_name(position_and_velocity_names) -> str:
    """The name of the first velocity column: the rate of the first position column (`model._block_names`: a
    floating base or inner floating joint J_x … J_qw → J_vx, planar J_x J_y J_cos J_sin → J_vx, spherical
    J_qx … J_qw → J_wx, a 1-DOF joint J → J_dot)."""
    names = list(position_and_velocity_names)
    first = names[0] if names else ""
    joint, _, suffix = first.rpartition("_")
    if suffix == "x" and (f"{joint}_qw" in names or f"{joint}_cos" in names):
        return f"{joint}_vx"
    if suffix == "qx" and f"{joint}_qw" in names:
        return f"{joint}_wx"
    return f"{first}_dot"


def fill_generalized(trajectory: Trajectory, model) -> None:
    base_q, base_v = model.base_nq, model.base_nv
    independent = list(model.coordinate_map.independent)
    trajectory.q = np.column_stack([trajectory.positions[:, :base_q],
                                    trajectory.positions[:, [base_q + k for k in independent]]])
    trajectory.v = np.column_stack([trajectory.velocities[:, :base_v],
                                    trajectory.velocities[:, [base_v + k for k in independent]]])
    trajectory.coordinate_names = tuple(model.coordinate_names)


def _json_default(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    return str(value)
