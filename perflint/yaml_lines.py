"""Where a key is in a YAML file, for error messages that name its line (config and rule files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def yaml_line(path: Path, loc: list[Any], exact: bool = False) -> int | None:
    """The line (1-based) of the YAML node at `loc` (keys and list indexes), or of its nearest
    parent present (`exact`: None unless the whole of `loc` is there); None for TOML or an
    unreadable file. Used only on an error, so it reads again."""
    if path.suffix not in (".yaml", ".yml"):
        return None
    import yaml

    try:
        node = yaml.compose(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except (OSError, yaml.YAMLError):
        return None
    if node is None:
        return None
    line = int(node.start_mark.line) + 1
    for part in loc:
        nxt = None
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == str(part) or str(k.value).replace("-", "_") == str(part):
                    line = int(k.start_mark.line) + 1
                    nxt = v
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            nxt = node.value[part]
            line = int(nxt.start_mark.line) + 1
        if nxt is None:
            return None if exact else line
        node = nxt
    return line
