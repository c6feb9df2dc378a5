"""Plugin discovery and registration (pluggy)."""

from .hookspecs import PLUGIN_API_VERSION, hookimpl
from .manager import BackendInfo, get_manager

__all__ = ["hookimpl", "PLUGIN_API_VERSION", "get_manager", "BackendInfo"]
