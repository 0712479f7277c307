"""Progress bars through tqdm (a core dependency): ``tqdm.auto`` draws a widget in Jupyter and a text bar elsewhere."""

__all__ = ["progress_bar"]


def progress_bar(total, desc, enabled=True, file=None):
    """A tqdm bar over ``total`` steps, with ``update``, ``set_postfix_str`` and ``close``.

    ``enabled=False`` gives a disabled bar (its methods do nothing, it writes nothing); ``file`` is the
    stream of the text bar (default: standard error)."""
    # imported on first use, not with fastfm: tqdm.auto loads asyncio (~80 ms) that `import fastfm` need not pay
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, leave=True, disable=not enabled, file=file)
