"""Which nn.Module range (torch.profiler's `nn.Module: Name_N` python_function events, recorded
with `with_stack=True`) each op ran inside: the module view of the op table and the `mod` column
of the kernel table on traces without pyprof's markers."""

from __future__ import annotations

import numpy as np

from perflint.graph.nesting import enclosing, nest
from perflint.ids import unique_inverse
from perflint.model import NONE, Trace

MODULE_PREFIX = "nn.Module: "


class Paths:
    """Interned "/"-joined paths; id NONE is no path."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.ids: dict[str, int] = {}

    def id(self, s: str) -> int:
        got = self.ids.get(s)
        if got is None:
            got = self.ids[s] = len(self.text)
            self.text.append(s)
        return got

    def down(self, levels: list[np.ndarray], parent: np.ndarray, label: np.ndarray, text: list[str]) -> np.ndarray:
        """Per item: its path, the labels (indices into `text`; NONE: none) on its chain,
        outermost first. `levels` lists the items by depth, roots first."""
        path = np.full(len(parent), NONE, dtype=np.int64)
        for k, items in enumerate(levels):
            up = path[parent[items]] if k else np.full(len(items), NONE, dtype=np.int64)
            own = label[items].astype(np.int64)
            mine = up.copy()
            has = own != NONE
            if has.any():
                pairs = np.stack([up[has], own[has]], axis=1)
                uniq, pinv = np.unique(pairs, axis=0, return_inverse=True)
                ids = [self.id(f"{self.text[u]}/{text[lab]}" if u != NONE else text[lab]) for u, lab in uniq.tolist()]
                mine[has] = np.asarray(ids, dtype=np.int64)[pinv.reshape(-1)]
            path[items] = mine
        return path


def kineto_modules(t: Trace, paths: Paths) -> tuple[np.ndarray, np.ndarray] | None:
    """Per op: (module name id, module path id) of the innermost nn.Module range around it; None
    without nn.Module python_function ranges."""
    py = t.pyfn
    if not len(py):
        return None
    names, inv = unique_inverse(py.name)
    text = [t.s(int(n)) for n in names.tolist()]
    is_mod = np.asarray([s.startswith(MODULE_PREFIX) for s in text], dtype=bool)
    sel = np.flatnonzero(is_mod[inv])
    if not len(sel):
        return None
    label = [s[len(MODULE_PREFIX) :] for s in text]
    thread, ts, dur = py.thread[sel], py.ts[sel], py.dur[sel]
    parent, depth, order = nest(thread, ts, dur)
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(depth)))).tolist()
    levels = [by_depth[a:b] for a, b in zip(bounds, bounds[1:])]
    own = inv[sel]
    mod_path = paths.down(levels, parent, own, label)
    mod_name = np.asarray([paths.id(s) for s in label], dtype=np.int64)[own]
    hit = enclosing(thread, ts, dur, parent, order, t.ops.thread, t.ops.ts)
    ok = hit != NONE
    name = np.full(len(t.ops), NONE, dtype=np.int64)
    path = np.full(len(t.ops), NONE, dtype=np.int64)
    name[ok], path[ok] = mod_name[hit[ok]], mod_path[hit[ok]]
    return name, path


def innermost_modules(t: Trace) -> tuple[np.ndarray, list[str]] | None:
    """Per op: its innermost nn.Module range (an index into the names returned with it; NONE
    outside any); None without nn.Module python_function ranges."""
    paths = Paths()
    kin = kineto_modules(t, paths)
    return None if kin is None else (kin[0], paths.text)
