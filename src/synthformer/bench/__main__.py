"""``python -m synthformer.bench``: regenerate the paper's Table 4 on this machine."""

import sys

from .cli import main

sys.exit(main())
