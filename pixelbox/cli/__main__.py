"""``python -m pixelbox.cli``: the same as the ``pixelbox`` script."""

import sys

from pixelbox.cli import main

sys.exit(main())
