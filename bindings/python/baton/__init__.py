"""baton: the Python binding of libbaton (see bindings/python/README.md).

The blocking API (threads): Client, Hold, Leadership, Cancel, Watch, Event,
LockState, Holder, Waiter; every error is a BatonError subclass named after
its code (baton.ELOST, baton.EWOULDBLOCK, ...).
"""
from .errors import *  # noqa: F401,F403
from .errors import BatonError, __all__ as _errors_all
from .cancel import Cancel
from .client import Client
from .hold import Hold, Leadership
from .state import Holder, LockState, Waiter
from .watch import Event, Watch
# asyncio: the aio half's import goes here (baton/aio.py).

__all__ = list(_errors_all) + ["Cancel", "Client", "Event", "Hold", "Holder", "Leadership",
                               "LockState", "Waiter", "Watch"]
