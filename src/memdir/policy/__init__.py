"""Policy applied to what the model asks: limits now; secrets, injection screening and expiry later."""

from __future__ import annotations

from .limits import Limits

__all__ = ["Limits"]
