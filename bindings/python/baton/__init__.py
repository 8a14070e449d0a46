"""baton: the Python binding of libbaton (see bindings/python/README.md).

The blocking API (threads): Client, Hold, Leadership, Cancel, Watch; asyncio:
baton.aio (connect, AsyncClient). What both read: LockState, Holder, Waiter,
Event, Mode, EventKind. Every error is a BatonError subclass named after its
code (baton.ELOST, baton.EWOULDBLOCK, ...).
"""
from .errors import *  # noqa: F401,F403
from .errors import BatonError, __all__ as _errors_all
from .cancel import Cancel
from .client import Client
from .hold import Hold, Leadership
from .state import Event, EventKind, Holder, LockState, Mode, Waiter
from .watch import Watch
from . import aio  # noqa: E402  (baton.aio, the asyncio client)

__all__ = list(_errors_all) + ["Cancel", "Client", "Event", "EventKind", "Hold", "Holder",
                               "Leadership", "LockState", "Mode", "Waiter", "Watch", "aio"]
