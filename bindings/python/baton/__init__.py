"""baton: the Python binding of libbaton (see bindings/python/README.md)."""
from .errors import *  # noqa: F401,F403
from .errors import BatonError, __all__ as _errors_all

__all__ = list(_errors_all)
