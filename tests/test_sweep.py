"""The benchmark runner: jobs, local executor, on-disk cache by inputs."""

import pytest

from margsynth.experiments import sweep


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MARGSYNTH_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MARGSYNTH_CACHE", raising=False)
    return tmp_path


def test_grid_and_job_validation():
    jobs = sweep.grid(["titanic"], [1, 2], ["PGM+MST", "independent"], [0, 1], params={"PGM+MST": {"iters": 50}})
    assert len(jobs) == 8 and len(set(jobs)) == 8
    assert dict(jobs[0].params) == {"iters": 50} and jobs[2].params == ()
    with pytest.raises(ValueError, match="unknown method"):
        sweep.Job("titanic", 1.0, "nope", 0)
    with pytest.raises(ValueError, match="at least one job"):
        sweep.run_sweep([])


def test_sweep_runs_caches_and_recomputes_only_changes(cache):
    metrics = ("tv-2way", "downstream")
    jobs = sweep.grid(["titanic"], [1.0], ["independent"], [0, 1], metrics=metrics)
    first = sweep.run_sweep(jobs, workers=2, progress=False)
    assert list(first["seed"]) == [0, 1]
    assert (first["epsilon_spent"] <= 1.0 + 1e-9).all()
    assert first["tv-2way"].between(0, 1).all() and first["downstream"].between(0, 1).all()
    files = sorted(cache.rglob("*.pkl"))
    assert len(files) == 2
    again = sweep.run_sweep(jobs, workers=1, progress=False)
    assert again.drop(columns="seconds").equals(first.drop(columns="seconds"))
    assert again["seconds"].tolist() == first["seconds"].tolist()  # read back, not rerun
    more = sweep.grid(["titanic"], [1.0, 2.0], ["independent"], [0, 1], metrics=metrics)
    sweep.run_sweep(more, workers=1, progress=False)
    assert len(sorted(cache.rglob("*.pkl"))) == 4  # only the two new jobs were computed


def test_sweep_on_a_dask_cluster(cache):
    distributed = pytest.importorskip("dask.distributed")
    jobs = sweep.grid(["titanic"], [1.0], ["independent"], [3], metrics=("tv-2way",))
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster:
        frame = sweep.run_sweep(jobs, scheduler=cluster.scheduler_address, progress=False)
    local = sweep.run_sweep(jobs, workers=1, progress=False)  # cached by the Dask run
    assert frame["tv-2way"].tolist() == local["tv-2way"].tolist()
    assert len(sorted(cache.rglob("*.pkl"))) == 1


def _affine(x, a=1):
    return {"x": x, "y": a * x}


def test_map_jobs_keeps_order_and_keywords():
    calls = [{"x": i, "a": 3} for i in range(5)]
    assert sweep.map_jobs(_affine, calls, workers=1, progress=False) == [{"x": i, "y": 3 * i} for i in range(5)]
    assert sweep.map_jobs(_affine, calls, workers=2, progress=False) == [{"x": i, "y": 3 * i} for i in range(5)]
    with pytest.raises(ValueError, match="at least one job"):
        sweep.map_jobs(_affine, [])
    with pytest.raises(ValueError, match="workers"):
        sweep.map_jobs(_affine, calls, workers=0)
