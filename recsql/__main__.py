"""``python -m recsql`` is the ``recsql`` command."""
import sys

from .cli import main

sys.exit(main())
