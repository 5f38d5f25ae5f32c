"""Sweep configs: every malformed config is a ModelError naming the file and key, raised before any cluster."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from biobullet.core.errors import ModelError
from biobullet.sweep import load_config, point_id, run_sweep

REPO = Path(__file__).resolve().parents[2]
OSC = {"function": "demo.damped_oscillator", "sweep": [{"path": "stiffness", "values": [1.0, 4.0]}]}


def _with(**changes):
    config = json.loads(json.dumps(OSC))
    config.update(changes)
    return config


# (config, key path that must be named, words of the message)
BAD_CONFIGS = [
    pytest.param(_with(sweep=[{"path": "damper.stiffnes", "values": [1]}]), "sweep[0].path",
                 "unknown parameter path", id="unknown-swept-path"),
    pytest.param(_with(fixed={"masss": 1.0}), "fixed.masss", "unknown parameter path", id="unknown-fixed-path"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": []}]), "sweep[0].values", "empty range",
                 id="empty-values"),
    pytest.param(_with(sweep=[{"path": "stiffness", "start": 1, "stop": 2, "num": 0}]), "sweep[0].num",
                 "empty range", id="num-0"),
    pytest.param(_with(sweep=[{"path": "stiffness", "start": 2, "stop": 2, "num": 3}]), "sweep[0]",
                 "empty range", id="start-equals-stop"),
    pytest.param(_with(sweep=[{"path": "stiffness", "start": 1, "stop": 2, "num": 2.5}]), "sweep[0].num",
                 "not an integer", id="num-not-int"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": [1, "soft"]}]), "sweep[0].values[1]",
                 "not a number", id="non-numeric-value"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": [1, True]}]), "sweep[0].values[1]",
                 "not a number", id="bool-value"),
    pytest.param(_with(fixed={"mass": "heavy"}), "fixed.mass", "not a number", id="non-numeric-fixed"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": [-1.0]}]), "sweep[0].values[0]",
                 "below the minimum", id="out-of-range"),
    pytest.param(_with(sweep=[{"path": "stiffness", "start": -1, "stop": 2, "num": 3, "log": True}]),
                 "sweep[0].start", "below the minimum", id="log-negative"),
    pytest.param(_with(sweep=[{"path": "damping", "start": 0, "stop": 2, "num": 3, "log": True}]),
                 "sweep[0].start", "log range", id="log-zero"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": [1, 1]}]), "sweep[0]", "repeated",
                 id="repeated-values"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": [1], "start": 1}]), "sweep[0]", "either",
                 id="values-and-range"),
    pytest.param(_with(sweep=[{"path": "stiffness", "values": [1], "step": 1}]), "sweep[0].step", "unknown key",
                 id="unknown-axis-key"),
    pytest.param(_with(fixed={"stiffness": 1.0}), "sweep[0].path", "both fixed and swept", id="fixed-and-swept"),
    pytest.param(_with(sweep=[]), "fixed", "required parameter", id="required-missing"),
    pytest.param(_with(combine="cartesian"), "combine", "unknown combination", id="bad-combine"),
    pytest.param(_with(combine="zip", sweep=[{"path": "stiffness", "values": [1, 2]},
                                             {"path": "damping", "values": [0.1]}]), "sweep", "equal length",
                 id="zip-lengths"),
    pytest.param(_with(function="demo.nope"), "function", "unknown point function", id="unknown-function"),
    pytest.param(_with(function="os:system"), "function", "refusing to import", id="non-biobullet-module"),
    pytest.param(_with(function="subprocess:run"), "function", "refusing to import", id="non-biobullet-module-2"),
    pytest.param(_with(function="biobullet.cli:main"), "function", "not a sweep point function",
                 id="biobullet-non-point-function"),
    pytest.param(_with(function="biobullet.sweep.runner:os"), "function", "not a sweep point function",
                 id="biobullet-reexported-module"),
    pytest.param(_with(function="biobullet.sweep.demo:_private"), "function", "malformed",
                 id="private-attribute"),
    pytest.param(_with(function="biobullet.sweep.demo:sleep.__globals__"), "function", "malformed",
                 id="attribute-chain"),
    pytest.param(_with(retries=-1), "retries", "invalid value", id="bad-retries"),
    pytest.param(_with(outt="x"), "outt", "unknown key", id="unknown-top-key"),
]


@pytest.fixture
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Any attempt to start a cluster or a client fails the test loudly."""
    import distributed

    started: list[str] = []

    def forbidden(name: str):
        def start(*args, **kwargs):
            started.append(name)
            raise AssertionError(f"{name} started for an invalid config")
        return start

    monkeypatch.setattr(distributed, "LocalCluster", forbidden("LocalCluster"))
    monkeypatch.setattr(distributed, "Client", forbidden("Client"))
    return started


@pytest.mark.parametrize("config, key, words", BAD_CONFIGS)
def test_bad_config_is_model_error_naming_file_and_key_before_any_cluster(
        config: dict, key: str, words: str, tmp_path: Path, no_cluster: list[str]) -> None:
    path = tmp_path / "bad_sweep.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(ModelError) as info:
        run_sweep(path, out=out, workers=2, progress=False)
    message = str(info.value)
    assert str(path) in message
    assert f": {key}: " in message, message
    assert words in message, message
    assert info.value.expected, "the error says what was expected"
    assert no_cluster == [] and not out.exists(), "nothing starts before the config is valid"


def test_unknown_path_error_lists_the_allowed_paths(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as info:
        load_config(_with(sweep=[{"path": "damper.stiffness", "values": [1]}]))
    for allowed in ("stiffness", "damping", "mass", "velocity", "cycles"):
        assert allowed in str(info.value)


def test_unreadable_and_unparsable_files(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot read sweep config"):
        load_config(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text('{"function": "demo.sleep",\n "sweep": [}', encoding="utf-8")
    with pytest.raises(ModelError, match=r"broken\.json: invalid JSON at line 2"):
        load_config(broken)
    broken_toml = tmp_path / "broken.toml"
    broken_toml.write_text("function = \n", encoding="utf-8")
    with pytest.raises(ModelError, match=r"broken\.toml: invalid TOML"):
        load_config(broken_toml)
    array = tmp_path / "array.json"
    array.write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ModelError, match="top level must be an object"):
        load_config(array)


def test_product_zip_log_ranges_and_defaults() -> None:
    config = load_config({"function": "demo.damped_oscillator", "fixed": {"mass": 2},
                          "sweep": [{"path": "stiffness", "start": 1, "stop": 100, "num": 3, "log": True},
                                    {"path": "damping", "start": 0.0, "stop": 0.3, "num": 4}]})
    assert config.axes[0].values == (1.0, 10.0, 100.0)
    assert config.axes[1].values == (0.0, 0.1, 0.2, 0.3)
    points = config.points()
    assert len(points) == 12 and len({p.id for p in points}) == 12
    assert points[1].params == {"mass": 2.0, "stiffness": 1.0, "damping": 0.1, "velocity": 1.0, "cycles": 6.0}
    zipped = load_config({"function": "demo.damped_oscillator", "combine": "zip",
                          "sweep": [{"path": "stiffness", "values": [1, 2, 3]},
                                    {"path": "damping", "values": [0.1, 0.2, 0.3]}]}).points()
    assert [(p.params["stiffness"], p.params["damping"]) for p in zipped] == [(1, 0.1), (2, 0.2), (3, 0.3)]


def test_point_ids_are_stable_and_depend_on_every_parameter() -> None:
    a = load_config(OSC).points()
    b = load_config(json.loads(json.dumps(OSC))).points()
    assert [p.id for p in a] == [p.id for p in b]
    # an int written for a float parameter is the same point
    c = load_config(_with(sweep=[{"path": "stiffness", "values": [1, 4]}])).points()
    assert [p.id for p in a] == [p.id for p in c]
    d = load_config(_with(fixed={"mass": 2.0})).points()
    assert not {p.id for p in a} & {p.id for p in d}
    assert point_id("x:y", {"a": 1.0}) == point_id("x:y", {"a": 1.0}) != point_id("x:z", {"a": 1.0})


def test_toml_config_and_out_relative_to_config_file(tmp_path: Path) -> None:
    path = tmp_path / "osc.toml"
    path.write_text('function = "demo.damped_oscillator"\nout = "results"\n'
                    '[fixed]\nmass = 3.0\n'
                    '[[sweep]]\npath = "stiffness"\nstart = 1.0\nstop = 3.0\nnum = 3\n', encoding="utf-8")
    config = load_config(path)
    assert config.out == tmp_path / "results"
    assert [p.params["stiffness"] for p in config.points()] == [1.0, 2.0, 3.0]
    assert config.name == "osc"


def test_biobullet_module_path_of_a_point_function_is_accepted() -> None:
    config = load_config(_with(function="biobullet.sweep.demo:damped_oscillator"))
    assert config.function.target == "biobullet.sweep.demo:damped_oscillator"


def test_cli_reports_bad_config_in_one_line_without_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_with(sweep=[{"path": "stiffness", "start": 1, "stop": 2, "num": 0}])), "utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    result = subprocess.run([sys.executable, "-m", "biobullet.sweep", str(path), "--out", str(tmp_path / "o")],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert "sweep[0].num" in result.stderr and str(path) in result.stderr
    assert not (tmp_path / "o").exists()


def test_importing_the_sweep_package_imports_nothing_heavy() -> None:
    code = ("import sys, biobullet.sweep, biobullet.sweep.config, biobullet.sweep.runner, biobullet.sweep.cli;"
            "print([m for m in ('numpy', 'dask', 'distributed', 'matplotlib', 'scipy', 'tqdm') if m in sys.modules])")
    env = dict(os.environ, PYTHONPATH=str(REPO / "plugin"))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


@pytest.mark.parametrize("name", ["damped_oscillator.json", "damped_oscillator.toml"])
def test_bundled_example_configs_are_valid(name: str) -> None:
    config = load_config(REPO / "plugin" / "biobullet" / "sweep" / "examples" / name)
    assert config.function.name == "demo.damped_oscillator" and config.points()
