"""The Quiver SDK under the name the product documents use (``from flymyai import AgentClient``).

Code written against them runs unchanged: every public name is :mod:`quiver`'s, the same objects.
"""

from quiver import *  # noqa: F401,F403
from quiver import __all__, __version__  # noqa: F401
