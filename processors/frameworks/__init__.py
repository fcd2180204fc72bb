"""What each agent framework means, one package per framework family, and the registry that
gathers them.

A family's package (``processors/frameworks/<family>/``) holds everything the family means:
its normalizer where it has attributes of its own, its limit errors and limit answers, its
tool-value envelopes and answer tools, its handoff and delegation tools, its team layout; as a
declared :class:`~mast_otel.processors.frameworks.table.Framework` named ``FRAMEWORK`` plus
small pure functions. :func:`registry` finds the packages by themselves (every package in this
folder's ``__path__``) and merges their tables once, at first use; the normalizers, hint
derivation, the team model and the detectors read the merged tables and name no framework.
Adding a framework is a new folder (and its recorded corpus), with no edit elsewhere.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import Callable, TypeVar

from mast_otel.processors.frameworks.table import Framework, Registry, merge

__all__ = ["Framework", "Registry", "families", "registry", "reload"]


def families() -> tuple[Framework, ...]:
    """Every family package's ``FRAMEWORK``, in the order of the packages' names."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        framework = getattr(module, "FRAMEWORK", None)
        if not isinstance(framework, Framework):
            raise TypeError(f"framework package {info.name!r} declares no FRAMEWORK table")
        found.append(framework)
    return tuple(found)


@cache
def registry() -> Registry:
    """All families' tables merged, built at the first call and kept."""
    return merge(families())


def reload() -> Registry:
    """Discover the families again (after a folder was added to ``__path__``) and merge them anew.
    The shared code's own caches built from the registry are cleared through the callbacks
    registered with :func:`on_reload`."""
    registry.cache_clear()
    for clear in _RELOAD_HOOKS:
        clear()
    return registry()


_RELOAD_HOOKS: list[Callable[[], object]] = []
F = TypeVar("F", bound=Callable[[], object])


def on_reload(cached: F) -> F:
    """Register something built from the registry, cleared by :func:`reload`: a ``functools``
    cache (its ``cache_clear`` is what runs) or a plain function that clears it. Usable as a
    decorator above ``@cache``; returns ``cached`` unchanged."""
    _RELOAD_HOOKS.append(getattr(cached, "cache_clear", cached))
    return cached
