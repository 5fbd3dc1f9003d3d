"""Hatchling build hook: compile the optional C speed-ups, the Kineto reader's scanner
``perflint.readers.kineto._kscan`` and the step model's replay ``perflint.stepmodel._replay``.

Each extension is a speed-up only; perflint falls back to pure Python when it cannot be imported.
So, as with PyYAML's libyaml binding, any failure to build one turns into a one-line warning and
pure Python for that part, never a failed install. Set ``PERFLINT_NO_NATIVE=1`` to skip the
compile.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
import tempfile
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# (module, source, what falls back to pure Python without it)
EXTENSIONS = (
    ("perflint.readers.kineto._kscan", "perflint/readers/kineto/_kscan.c", "the pure-Python reader"),
    ("perflint.stepmodel._replay", "perflint/stepmodel/_replay.c", "the pure-Python replay"),
)


def _warn(message: str) -> None:
    print(f"perflint: {message}", file=sys.stderr, flush=True)


class KscanBuildHook(BuildHookInterface):
    PLUGIN_NAME = "custom"
    _tmpdir: str | None = None

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        # An editable install imports straight from the source tree, so a
        # leftover .so there would shadow a skipped or failed build.
        if version == "editable":
            for name, _, _ in EXTENSIONS:
                in_tree = os.path.join(self.root, name.replace(".", "/") + _ext_suffix())
                if os.path.exists(in_tree):
                    os.remove(in_tree)

        if os.environ.get("PERFLINT_NO_NATIVE", "") not in ("", "0"):
            _warn("PERFLINT_NO_NATIVE is set; not building the C speed-ups")
            return

        self._tmpdir = tempfile.mkdtemp(prefix="perflint-native-")
        for name, source, fallback in EXTENSIONS:
            rel_path = name.replace(".", "/") + _ext_suffix()
            try:
                built = _compile(self.root, os.path.join(self._tmpdir, name), name, source)
            except Exception as exc:  # noqa: BLE001 - any failure means "pure Python"
                reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                _warn(f"C speed-up {name} not built ({type(exc).__name__}: {reason}); using {fallback}")
                continue
            if version == "editable":
                shutil.copy2(built, os.path.join(self.root, rel_path))
            else:
                build_data["force_include"][built] = rel_path
                build_data["pure_python"] = False
                build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self._tmpdir:
            shutil.rmtree(self._tmpdir, ignore_errors=True)


def _ext_suffix() -> str:
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def _compile(root: str, workdir: str, name: str, rel_source: str) -> str:
    source = os.path.join(root, rel_source)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"{rel_source} is missing")

    # Imported here so that a build environment without setuptools still builds.
    from setuptools import Distribution, Extension
    from setuptools.command.build_ext import build_ext

    dist = Distribution({"name": "perflint-native", "ext_modules": [Extension(name, [source])]})
    cmd = build_ext(dist)
    cmd.build_lib = os.path.join(workdir, "lib")
    cmd.build_temp = os.path.join(workdir, "temp")
    cmd.ensure_finalized()
    cmd.run()
    built = cmd.get_ext_fullpath(name)
    if not os.path.isfile(built):
        raise FileNotFoundError(f"compiler produced no {os.path.basename(built)}")
    return built
