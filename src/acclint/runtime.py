"""`acclint.runtime`: the runtime companion's public API (lives in `acclint.runtime_checks`)."""

from acclint.runtime_checks import *  # noqa: F401,F403
from acclint.runtime_checks import __all__  # noqa: F401
