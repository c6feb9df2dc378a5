"""The hot modules, compiled: the same ``.py`` sources built in place as extension modules with Cython.

A tiny op's cost in core is Python: the dispatcher, the autograd kernel and its graph, the engine, the NumPy
runtime's ``wrap``, views and factories. Compiled by Cython (as plain Python: no type declarations, annotations
ignored), the same source runs with a fraction of the interpreter's per-bytecode work: ``(x * y).sum().backward()``
on 4 elements 95 -> 59 us on session 43's Xeon. The sources stay the one truth; the extension modules are a cache
of them:

- ``python -m core compile`` (run by ``scripts/setup_env.py`` when a hot source changed, and where Cython and a
  C compiler are installed) compiles :data:`HOT_MODULES` next to their sources (one extension file per
  interpreter version) and records in ``_hot.json`` the SHA-256 of the source each was built from (its entries
  are dropped before the build and written after it, atomically: a build cut short leaves none, so nothing it
  left is used).
- ``import core`` calls :func:`install_guard` first: a module whose compiled build does not match its source
  byte for byte (edited since, or never recorded) is imported from its source instead. ``CORE_PURE_PYTHON=1``
  imports every hot module from source (debuggers, coverage, line tracers).
- ``python -m core info`` says which modules run compiled.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sys
import types
from pathlib import Path

__all__ = ["HOT_MODULES", "HotSet", "CORE", "hot_sets", "status", "install_guard", "build", "clean",
           "is_function"]

# What every op passes through, measured with bytecode counts of a tiny forward+backward and a small MLP step
HOT_MODULES = (
    "core.dispatch.operator",
    "core.autograd.engine",
    "core.autograd.kernel",
    "core.autograd.graph",
    "core.autograd.functional",
    "core.storage",
    "core.backends.numpy.runtime",
    "core.backends.kit.reference.elementwise",
    "core.ops.view",
    "core.ops.creation",
    "core.ops.derivatives",
    "core.ops.elementwise",
    "core.ops.reduction",
    "core.ops.linalg",
    "core.ops._util",
    "core.tensor",
    "core.dtypes",
    "core.dispatch.spec",
    "core.dispatch.capture",
    "core.dispatch.keys",
    "core.autograd.grad_mode",
    "core.memory_formats",
    "core.backends.kit.layout",
    "core.backends.kit.reference.reduction",
    "core.nn.modules.module",
    "core.nn.modules.container",
    "core.nn.modules.linear",
    "core.nn.modules.activation",
    "core.nn.functional.linear",
    "core.nn.functional.activation",
    "core.nn.functional.loss",
    "core.optim.optimizer",
    "core.optim.sgd",
)

ROOT = Path(__file__).resolve().parent.parent  # the folder holding the ``core`` package
# Cython's directives: Python semantics throughout (annotations are documentation, not C types), functions that
# introspect like Python's (signatures, keyword arguments)
DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True, "always_allow_keywords": True}


def is_function(obj) -> bool:
    """Whether ``obj`` is a function written in Python, interpreted or compiled here (Cython's functions bind
    ``self``, take keywords and report signatures as Python's do, but are not ``types.FunctionType``)."""
    return isinstance(obj, types.FunctionType) or type(obj).__name__ == "cython_function_or_method"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class HotSet:
    """The hot modules of one package (core's, or a plugin's: ``core_cpu_c.HOT``), compiled in place.

    ``root`` is the folder holding the package; the record of what each extension was built from is
    ``<package>/_hot.json``. A package calls :meth:`install_guard` in its ``__init__`` before importing any of
    ``modules``.
    """

    def __init__(self, package: str, root: Path, modules: tuple):
        self.package, self.root, self.modules = package, Path(root), tuple(modules)
        self.manifest = self.root / package / "_hot.json"  # extension file -> SHA-256 of its source at build time
        self._finder = None

    def source(self, name: str) -> Path:
        """The ``.py`` file of hot module ``name``."""
        return self.root.joinpath(*name.split(".")).with_suffix(".py")

    def extension(self, name: str) -> Path | None:
        """This interpreter's compiled extension module next to ``name``'s source, if one was built."""
        src = self.source(name)
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            candidate = src.with_suffix(suffix)
            if candidate.is_file():
                return candidate
        return None

    def _recorded(self) -> dict:
        try:
            return json.loads(self.manifest.read_text())
        except (OSError, ValueError):
            return {}

    def _key(self, ext: Path) -> str:
        """The record's key of an extension file: its path under the root (one file per interpreter version, so
        each interpreter's build is checked against the source it was made from)."""
        return ext.relative_to(self.root).as_posix()

    def _write(self, record: dict) -> None:
        record = {key: value for key, value in record.items() if (self.root / key).is_file()}
        tmp = self.manifest.with_name(f".{self.manifest.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
        os.replace(tmp, self.manifest)

    def status(self) -> dict:
        """{hot module: "compiled", "stale" (built from another version of its source: the source runs),
        "source" (no extension for this interpreter, or ``CORE_PURE_PYTHON=1``)}, as this process imports them."""
        recorded = self._recorded()
        pure = os.environ.get("CORE_PURE_PYTHON", "") not in ("", "0")
        out = {}
        for name in self.modules:
            ext = self.extension(name)
            if pure or ext is None:
                out[name] = "source"
            else:
                out[name] = "compiled" if recorded.get(self._key(ext)) == _digest(self.source(name)) else "stale"
        return out

    def install_guard(self) -> None:
        """Make the modules whose extension does not match their source import from source."""
        if self._finder is not None or not any(self.extension(name) for name in self.modules):
            return  # guarded already, or nothing compiled: the ordinary import finds the sources
        fallback = {name for name, state in self.status().items() if state != "compiled"}
        if fallback:
            self._finder = _FromSource(self, fallback)
            sys.meta_path.insert(0, self._finder)

    def build(self, jobs: int | None = None, names: tuple | None = None) -> None:
        """Compile the modules ``names`` (default: all) in place and record their sources' digests."""
        from Cython.Build import cythonize
        from Cython.Compiler import Options
        from setuptools import Distribution, Extension
        from setuptools.command.build_ext import build_ext

        Options.error_on_unknown_names = False  # names a module makes at import (core.ops.elementwise's tables)
        # digests before compiling: an edit during the build leaves the record naming the older source
        names = self.modules if names is None else tuple(names)
        digests = {name: _digest(self.source(name)) for name in names}
        record = self._recorded()
        for name in names:  # until the new extensions are all in place, none of this interpreter's is used
            ext = self.extension(name)
            if ext is not None:
                record.pop(self._key(ext), None)
        self._write(record)
        work = ROOT / "build" / "hot" / self.package
        extensions = [Extension(name, [str(self.source(name).relative_to(self.root))]) for name in names]
        previous = os.getcwd()
        os.chdir(self.root)  # the sources are named relative to the root
        try:
            modules = cythonize(extensions, build_dir=str(work / "c"), compiler_directives=DIRECTIVES, quiet=True)
            command = build_ext(Distribution({"ext_modules": modules, "script_name": "core/_hot.py"}))
            command.build_lib, command.build_temp = str(work / "lib"), str(work / "temp")
            command.parallel = jobs or os.cpu_count() or 1
            command.ensure_finalized()
            command.run()
            for name in names:
                built = Path(command.get_ext_fullpath(name))
                target = self.source(name).with_name(built.name)
                # a new file renamed over the old one: a process that has the old one loaded keeps its pages
                staged = target.with_name(f".{target.name}.new")
                staged.write_bytes(built.read_bytes())
                os.replace(staged, target)
                record[self._key(target)] = digests[name]
        finally:
            os.chdir(previous)
        self._write(record)

    def clean(self) -> None:
        """Remove this interpreter's extensions and their record (every module then imports from source)."""
        record = self._recorded()
        for name in self.modules:
            ext = self.extension(name)
            if ext is not None:
                record.pop(self._key(ext), None)
                ext.unlink()
        self._write(record)


class _FromSource:
    """A meta path finder that imports the named hot modules from their ``.py`` sources."""

    def __init__(self, hot: HotSet, names: set):
        self.hot, self.names = hot, names

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname not in self.names:
            return None
        src = str(self.hot.source(fullname))
        return importlib.util.spec_from_file_location(fullname, src,
                                                      loader=importlib.machinery.SourceFileLoader(fullname, src))


CORE = HotSet("core", ROOT, HOT_MODULES)


def hot_sets(load: bool = False) -> list:
    """core's hot modules and those of the backend plugins imported in this process that declare some (their
    package's ``HOT``); ``load`` first has the plugin manager load every installed plugin (with its isolation:
    a plugin that fails to import is reported there, not here)."""
    import importlib.metadata

    if load:
        from .plugins.manager import get_manager

        try:
            get_manager().scan()
        except Exception:  # noqa: BLE001 - a bad config file: core info reports it; core's own set still builds
            pass
    sets = [CORE]
    for ep in importlib.metadata.entry_points(group="core.backends"):
        package = getattr(ep, "value", "").split(":")[0].split(".")[0]
        hot = getattr(sys.modules.get(package), "HOT", None)
        if isinstance(hot, HotSet) and all(hot.package != s.package for s in sets):
            sets.append(hot)
    return sets


def status(load: bool = False) -> dict:
    """{hot module: state} over :func:`hot_sets` (see :meth:`HotSet.status`)."""
    return {name: state for hot in hot_sets(load) for name, state in hot.status().items()}


def install_guard() -> None:
    """core's guard: run when this module is imported (``import core`` imports it before any hot module)."""
    CORE.install_guard()


def build(jobs: int | None = None, force: bool = False) -> list:
    """Compile in place every hot set with a module not running compiled (every set with ``force``); returns the
    packages built."""
    built = []
    for hot in hot_sets(load=True):
        names = hot.modules if force else tuple(name for name, state in hot.status().items() if state != "compiled")
        if names:
            print(f"compiling {len(names)} of {hot.package}'s {len(hot.modules)} hot modules with Cython", flush=True)
            hot.build(jobs, names)
            built.append(hot.package)
    return built


def clean() -> None:
    """Remove every hot set's extensions for this interpreter."""
    for hot in hot_sets(load=True):
        hot.clean()


install_guard()
