"""docs/api.md's examples run: every ```python block, from the repository root, against fixtures/."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

BLOCKS = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "api.md").read_text(), flags=re.S)


def test_the_page_has_its_examples() -> None:
    assert len(BLOCKS) >= 4
    for name in ("perflint.check(", "perflint.summary(", "perflint.kernels(", "perflint.ops(", "perflint.load(", "assert_clean("):
        assert any(name in b for b in BLOCKS), name


@pytest.mark.parametrize("block", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_example_runs(block: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "api_md_example"}
    exec(compile(block, "docs/api.md", "exec"), namespace)
    tests = [f for n, f in namespace.items() if n.startswith("test_") and callable(f)]
    if tests:  # the plugin examples define tests: the first runs with a fixture-like object
        from perflint.pytest_plugin import PerflintFixture

        class _Request:
            config = type("C", (), {"getoption": staticmethod(lambda name: None)})()
            node = type("N", (), {"nodeid": "api_md"})()

        fixture = PerflintFixture(_Request(), ROOT)  # type: ignore[arg-type]
        tests[0](fixture)  # type: ignore[operator]
    else:
        assert capsys.readouterr().out.strip(), "an API example prints what it shows"
