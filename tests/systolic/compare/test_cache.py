"""The results cache (`systolic.compare.cache`): a grown sweep computes only its new points,
a corrupted entry is recomputed, the key follows the model file and its inputs."""

from pathlib import Path

import pytest

from systolic.compare import point
from systolic.compare.cache import ResultCache, cache_root, model_key, passes_version
from systolic.compare.grid import config_grid
from systolic.compare.points import Engine
from systolic.compare.sweep import PreparedModel, sweep
from systolic.config import ArrayConfig
from systolic.examples import example_path


@pytest.fixture
def compilations(monkeypatch: pytest.MonkeyPatch) -> list[ArrayConfig]:
    """The configurations compiled in this process, in order."""
    seen: list[ArrayConfig] = []
    compile_model = point.compile_model

    def counting(model: object, config: ArrayConfig, **options: object) -> object:
        seen.append(config)
        return compile_model(model, config, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(point, "compile_model", counting)
    return seen


def _engine(tmp_path: Path) -> Engine:
    return Engine(cache=ResultCache(model_key(example_path(), None, 0), tmp_path))


def test_a_grown_sweep_computes_only_its_new_points(
    lenet: PreparedModel, tmp_path: Path, compilations: list[ArrayConfig]
) -> None:
    small = config_grid(ArrayConfig(), arrays=["4x4"], dataflows=["ws", "os"])
    grown = config_grid(ArrayConfig(), arrays=["4x4", "8x8"], dataflows=["ws", "os"])
    first = sweep(lenet, small, engine=_engine(tmp_path))
    assert compilations == small
    compilations.clear()
    second = sweep(lenet, grown, engine=_engine(tmp_path))
    assert compilations == grown[2:]
    assert second == sweep(lenet, grown)
    assert [r.total_cycles for r in second[:2]] == [r.total_cycles for r in first]
    assert len(list(tmp_path.rglob("*.json"))) == 4


def test_a_corrupted_entry_is_recomputed(
    lenet: PreparedModel, tmp_path: Path, compilations: list[ArrayConfig]
) -> None:
    configs = config_grid(ArrayConfig(), arrays=["4x4"], dataflows=["ws", "os"])
    expected = sweep(lenet, configs, engine=_engine(tmp_path))
    cache = _engine(tmp_path).cache
    assert cache is not None
    broken = cache.path(configs[1], "model")
    broken.write_text(broken.read_text()[:40])
    compilations.clear()
    assert sweep(lenet, configs, engine=_engine(tmp_path)) == expected
    assert compilations == [configs[1]]
    assert cache.load(configs[1], "model", "x") is not None


def test_the_key_follows_model_inputs_backend_and_configuration(tmp_path: Path) -> None:
    other = tmp_path / "inputs.npy"
    other.write_bytes(b"not the seed")
    keys = {model_key(example_path(), None, 0), model_key(example_path(), None, 1),
            model_key(example_path(), other, 0)}  # fmt: skip
    assert len(keys) == 3
    cache = ResultCache(model_key(example_path(), None, 0), tmp_path)
    a, b = config_grid(ArrayConfig(), arrays=["4x4"], bus_bytes=[8, 16])
    paths = {cache.path(a, "model"), cache.path(b, "model"), cache.path(a, "rtl")}
    assert len(paths) == 3
    assert len(passes_version()) == 32


def test_the_folder_follows_systolic_cache_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SYSTOLIC_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path / "compare"
    monkeypatch.delenv("SYSTOLIC_CACHE_DIR")
    assert cache_root() == Path.home() / ".cache" / "systolic" / "compare"
