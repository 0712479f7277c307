"""Progress bars are tqdm's: counted updates and the postfix reach the stream given; disabled bars write nothing;
``minimize(progress=True)`` shows one."""
import io

import pytest
from tqdm import tqdm

import fastfm as ff
from fastfm._progress import progress_bar


def test_progress_bar_is_a_tqdm_bar_that_counts_updates_on_the_stream_given():
    stream = io.StringIO()
    bar = progress_bar(5, "fit", file=stream)
    assert isinstance(bar, tqdm)
    for _ in range(3):
        bar.update(1)
    bar.set_postfix_str("best=0.5")
    assert bar.n == 3 and bar.total == 5
    bar.close()
    text = stream.getvalue()
    assert "fit:" in text and "3/5" in text and "best=0.5" in text


def test_a_disabled_bar_accepts_the_calls_and_writes_nothing():
    stream = io.StringIO()
    bar = progress_bar(5, "fit", enabled=False, file=stream)
    bar.update(1)
    bar.set_postfix_str("best=1")
    bar.close()
    assert stream.getvalue() == ""


@pytest.mark.parametrize("progress", [True, False])
def test_minimize_shows_its_progress_only_when_asked(progress, capsys):
    space = ff.Space([ff.Real("x", -1.0, 1.0), ff.Categorical("c", ["a", "b"])])
    ff.minimize(lambda c: c["x"] ** 2 + (c["c"] == "b"), space, n_iter=3, n_init=3, seed=0, progress=progress)
    err = capsys.readouterr().err
    if progress:
        assert "fastfm[auto]" in err and "3/3" in err and "best=" in err
    else:
        assert err == ""
