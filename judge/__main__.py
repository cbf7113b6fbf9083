"""``python -m judge``: the same as the ``judge`` command."""

from judge.cli import main

main()
