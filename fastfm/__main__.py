"""``python -m fastfm ...``: the ``fastfm`` command (``fastfm.cli``)."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
