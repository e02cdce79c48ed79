"""``python -m recsql`` is the ``recsql`` command."""
import sys

from .entry import main

sys.exit(main())
