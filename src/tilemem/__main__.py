"""``python -m tilemem``: the ``tilemem`` command."""

import sys

from .cli import main

sys.exit(main())
