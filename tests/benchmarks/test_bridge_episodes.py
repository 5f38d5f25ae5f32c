"""Episodes on one client at constant cost (issue 25): 100 gym-style episodes (a Bridge made, 20 steps, closed) on
one PyBullet client, with and without resetSimulation between them; the thread CPU time per episode of the last 10
against the first 10, as a ratio measured in one run (was: 0.26 s → 10.5 s by episode 11, robots piling up because
close() left the body). No wall-clock threshold; the body count is asserted in the default run
(tests/integration/test_bridge_own_loop.py)."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

pybullet = pytest.importorskip("pybullet")
pytest.importorskip("pybullet_data")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the shared helpers (pytest's pythonpath)
from bridge_user_loop import episodes, write_coupled_kuka  # noqa: E402

EPISODES = 100


@pytest.mark.parametrize("reset_simulation", [False, True])
def test_time_per_episode_stays_constant(tmp_path, reset_simulation):
    urdf = write_coupled_kuka(tmp_path)
    client = pybullet.connect(pybullet.DIRECT)
    seconds = []
    try:
        start = time.thread_time()
        for _ in episodes(pybullet, urdf, client, EPISODES, reset_simulation=reset_simulation, steps=20):
            seconds.append(time.thread_time() - start)
            start = time.thread_time()
    finally:
        pybullet.disconnect(client)
    first, last = sorted(seconds[1:11])[4], sorted(seconds[-10:])[4]   # medians (episode 0 compiles)
    ratio = last / first
    print(f"\nresetSimulation={reset_simulation}: median episode {first * 1e3:.2f} ms (episodes 1-10), "
          f"{last * 1e3:.2f} ms (last 10): ratio {ratio:.2f}")
    assert ratio < 1.5
