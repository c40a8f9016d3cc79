"""Put the repository root on `sys.path`, so that a bench script run as `python bench/x.py`
can import the helpers it shares with the tests (`tests.support.random_programs`).

Import it for this effect before those helpers.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
"""The repository's root folder."""

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
