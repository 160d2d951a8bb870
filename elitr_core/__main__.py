"""``python -m elitr_core``: the command line."""

from elitr_core.cli.entry import script

script()
