"""Hatchling build hook: compile the optional C reader ``perflint.readers.kineto._kscan``.

The extension is a speed-up only; ``perflint.readers`` falls back to pure Python
when it cannot be imported. So, as with PyYAML's libyaml binding, any failure
to build it turns into a one-line warning and a pure-Python wheel, never a
failed install. Set ``PERFLINT_NO_NATIVE=1`` to skip the compile.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

EXT_NAME = "perflint.readers.kineto._kscan"
EXT_SOURCE = "perflint/readers/kineto/_kscan.c"


def _warn(message: str) -> None:
    print(f"perflint: {message}", file=sys.stderr, flush=True)


class KscanBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"
    _tmpdir: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        # An editable install imports straight from the source tree, so a
        # leftover .so there would shadow a skipped or failed build.
        rel_path = EXT_NAME.replace(".", "/") + _ext_suffix()
        in_tree = os.path.join(self.root, rel_path)
        if version == "editable" and os.path.exists(in_tree):
            os.remove(in_tree)

        if os.environ.get("PERFLINT_NO_NATIVE", "") not in ("", "0"):
            _warn("PERFLINT_NO_NATIVE is set; not building the C speed-up")
            return

        self._tmpdir = tempfile.mkdtemp(prefix="perflint-kscan-")
        try:
            built = _compile(self.root, self._tmpdir)
        except Exception as exc:  # noqa: BLE001 - any failure means "pure Python"
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            _warn(f"C speed-up not built ({type(exc).__name__}: {reason}); using the pure-Python reader")
            return

        if version == "editable":
            shutil.copy2(built, in_tree)
        else:
            build_data["force_include"][built] = rel_path
            build_data["pure_python"] = False
            build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _compile(root: str, workdir: str) -> str:
    source = os.path.join(root, EXT_SOURCE)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"{EXT_SOURCE} is missing")

    # Imported here so that a build environment without setuptools still builds.
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    dist = Distribution({"name": "perflint-kscan", "ext_modules": [Extension(EXT_NAME, [source])]})
    cmd = build_ext(dist)
    cmd.build_lib = os.path.join(workdir, "lib")
    cmd.build_temp = os.path.join(workdir, "temp")
    cmd.ensure_finalized()
    cmd.run()
    built = cmd.get_ext_fullpath(EXT_NAME)
    if not os.path.isfile(built):
        raise FileNotFoundError(f"compiler produced no {os.path.basename(built)}")
    return built
