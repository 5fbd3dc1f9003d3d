"""Plugin discovery: the cheap pre-scan of entry_points.txt must never hide a declared plugin."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from perflint import plugins


def _dist(site: Path, name: str, text: str, suffix: str = ".dist-info") -> None:
    d = site / f"{name}-1.0{suffix}"
    d.mkdir(parents=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (d / "entry_points.txt").write_text(text)


@pytest.mark.parametrize("suffix", [".dist-info", ".egg-info"])
def test_declared_plugin_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str) -> None:
    _dist(tmp_path, "other", "[console_scripts]\nx = y:z\n")
    _dist(tmp_path, "myreader", "[perflint.readers]\nnsys = myreader:read\n", suffix)
    monkeypatch.setattr(sys, "path", [str(tmp_path)])
    assert [ep.name for ep in plugins.entry_points("perflint.readers")] == ["nsys"]
    assert plugins.entry_points("perflint.reporters") == []


def test_no_declaration_means_no_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _dist(tmp_path, "other", "[console_scripts]\nx = y:z\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), str(tmp_path / "missing")])
    called = []
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: called.append(kw) or [])
    assert plugins.entry_points("perflint.facts") == []
    assert called == []  # the pre-scan answered


def test_zip_on_path_asks_importlib(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    z = tmp_path / "plugins.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("zipped-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: zipped\nVersion: 1.0\n")
        zf.writestr("zipped-1.0.dist-info/entry_points.txt", "[perflint.facts]\nz = zipped:register\n")
    monkeypatch.setattr(sys, "path", [str(z)])
    assert [ep.name for ep in plugins.entry_points("perflint.facts")] == ["z"]
