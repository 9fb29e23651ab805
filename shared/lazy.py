"""numpy on demand: the device path never imports it.

The device path (``randomize``, ``encode``, the client's signature checks,
ledger and outbox) is pure Python on the CSPRNG, so a device needs neither
numpy's import time (about 150 ms) nor its 70 MB.  Vectorized code
(simulation, decoding and aggregation) uses ``np`` from here exactly like the
module: the first attribute looked up imports numpy, and every attribute is
then cached on the proxy, so later look-ups cost what a module's do.

``numpy_type(value, name)`` asks whether a value is of a numpy scalar type
without importing numpy: a numpy value exists only once numpy is loaded.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .errors import MissingDependency

__all__ = ["INSTALL_HINT", "np", "numpy_loaded", "numpy_type"]

INSTALL_HINT = "numpy is needed for simulation and aggregation: pip install 'deniable[sim]'"


class _LazyNumpy:
    """A stand-in for the numpy module that imports it on first use."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy/pickle/inspect probes must not import numpy
            raise AttributeError(name)
        try:
            import numpy
        except ImportError as error:  # pragma: no cover - the test install has numpy
            raise MissingDependency(INSTALL_HINT) from error
        value = getattr(numpy, name)
        setattr(self, name, value)
        return value

    def __repr__(self) -> str:
        return "<numpy, imported on first use>"


if TYPE_CHECKING:
    import numpy as np
else:
    np = _LazyNumpy()


def numpy_loaded() -> bool:
    return "numpy" in sys.modules


def numpy_type(value: object, name: str) -> bool:
    """Whether ``value`` is an instance of ``numpy.<name>``, without importing numpy."""
    kind: Any = sys.modules.get("numpy")
    if kind is None:
        return False
    for part in name.split("."):
        kind = getattr(kind, part)
    return isinstance(value, kind)
