import pytest

from systolic.reference.kernels import blas_threads
from systolic.reference.kernels.blas_threads import single_threaded_blas


def _thread_count():
    controls = blas_threads._find_controls()
    if controls is None:
        pytest.skip("numpy does not use an OpenBLAS with thread control here")
    return controls[0]


@pytest.fixture
def no_user_setting(monkeypatch):
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)


def test_one_thread_inside_and_the_count_restored_after(no_user_setting):
    get = _thread_count()
    before = get()
    with single_threaded_blas():
        assert get() == 1
    assert get() == before


def test_count_restored_when_the_block_raises(no_user_setting):
    get = _thread_count()
    before = get()
    with pytest.raises(RuntimeError), single_threaded_blas():
        raise RuntimeError("boom")
    assert get() == before


def test_a_user_thread_setting_is_left_alone(monkeypatch):
    get = _thread_count()
    before = get()
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "2")
    with single_threaded_blas():
        assert get() == before
