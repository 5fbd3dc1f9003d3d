"""Kernel names parsed by structure: return type, namespaces, function name, template arguments,
parameters.

Three forms reach perflint: demangled C++ (`void at::native::reduce_kernel<512, 1, ...>(...)`, as
Kineto writes most), Itanium-mangled (`_ZN2ck...`, from nvprof/nsys exports and some ROCm
kernels; decoded by `itanium`) and plain C names (`volta_sgemm_128x64_nt`, `Cijk_...`,
`triton_poi_fused_add_0`). Parsing never raises and is memoized per unique name.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import lru_cache

from perflint.kernelnames.demangle import demangle, name_components

__all__ = ["KernelName", "parse_kernel_name", "short_name", "split_top"]

# The characters that open or close a group, separate names or arguments, and `operator`.
_TOKEN = re.compile(r"(?<![\w$])operator(?![\w$])|::|[<>()\[\]{},\s]")
# What follows `operator`: its symbol (conversion operators have none; their type follows).
_OP_SYMBOL = re.compile(
    r"\s*(?:\(\)|\[\]|->\*?|<=>|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||\+\+|--|[-+*/%^&|~!=<>,]=?"
    r"|(?:new|delete)(?:\[\])?(?![\w$])|\"\"\s*[\w$]+)?"
)
_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
_CLOSE = {")": "(", ">": "<", "]": "[", "}": "{"}
_QUALIFIERS = ("const", "volatile", "&", "&&", "noexcept")


@dataclass(frozen=True)
class KernelName:
    """One kernel name, parsed. Template arguments and parameters stay text; `arg(i)` parses a
    template argument the same way (a CUTLASS kernel's argument names the kernel)."""

    text: str  # the name as given
    form: str  # "c++" | "mangled" | "plain"
    return_type: str
    namespaces: tuple[str, ...]  # enclosing scopes, outermost first, without their template args
    function: str
    template_args: tuple[str, ...]
    params: tuple[str, ...] | None  # None: the name has no parameter list
    demangled: str | None = None  # for mangled names, the decoded text (None when undecodable)

    @property
    def scope(self) -> str:
        return "::".join(self.namespaces)

    @property
    def qualified(self) -> str:
        return "::".join((*self.namespaces, self.function))

    def arg(self, i: int) -> KernelName | None:
        """Template argument `i` parsed as a name (None when there is none)."""
        if -len(self.template_args) <= i < len(self.template_args):
            return parse_kernel_name(self.template_args[i])
        return None


@dataclass
class _Layout:
    """Where the top-level structure of a name is: positions at depth 0 and the commas one level
    inside each depth-0 group."""

    spaces: list[int]
    colons: list[int]  # start of each depth-0 "::"
    groups: list[tuple[str, int, int]]  # (opener, start, end exclusive) of depth-0 groups
    commas: dict[int, list[int]]  # group start -> positions of its depth-1 commas


def _layout(text: str) -> _Layout:
    """One scan over the separators. `>` closes only an open `<` (inside parentheses it is an
    operator); a closer pops back to its own opener, so a stray `<` cannot swallow the rest."""
    spaces: list[int] = []
    colons: list[int] = []
    groups: list[tuple[str, int, int]] = []
    commas: dict[int, list[int]] = {}
    stack: list[tuple[str, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.search(text, pos)
        if m is None:
            break
        tok = m.group(0)
        start = m.start()
        pos = m.end()
        if tok == "operator":
            sym = _OP_SYMBOL.match(text, pos)
            if sym is not None:
                pos = sym.end()
            continue
        depth = len(stack)
        if tok in _OPEN:
            stack.append((tok, start))
        elif tok in _CLOSE:
            want = _CLOSE[tok]
            if tok == ">" and (not stack or stack[-1][0] != "<"):
                continue
            if not any(o == want for o, _ in stack):
                continue  # a closer without its opener: text, not structure
            while stack:
                o, s = stack.pop()
                if o == want:
                    if not stack:
                        groups.append((o, s, start + 1))
                    break
        elif depth == 0:
            if tok == "::":
                colons.append(start)
            elif tok != ",":
                spaces.append(start)
        elif depth == 1 and tok == ",":
            commas.setdefault(stack[0][1], []).append(start)
    if stack:  # unclosed (a truncated name): the outermost group runs past the end
        o, s = stack[0]
        groups.append((o, s, n + 1))
    return _Layout(spaces, colons, groups, commas)


def _items(text: str, lay: _Layout, group: tuple[str, int, int]) -> tuple[str, ...]:
    """The comma-separated items of a depth-0 group."""
    _, start, end = group
    inner_end = end - 1
    cuts = [start] + [c for c in lay.commas.get(start, ()) if c < inner_end] + [inner_end]
    out = []
    for a, b in itertools.pairwise(cuts):
        item = text[a + 1 : b].strip()
        if item:
            out.append(item)
    return tuple(out)


def split_top(text: str) -> tuple[str, ...]:
    """`text` split at its depth-0 commas (an argument list without its brackets)."""
    wrapped = f"<{text}>"
    return _items(wrapped, _layout(wrapped), ("<", 0, len(wrapped)))


def _chunks(text: str, lay: _Layout) -> list[tuple[int, int]]:
    """Depth-0 whitespace-separated pieces; a piece that starts with `const::` (a member function's
    qualifier before a local entity) joins the one before."""
    out: list[tuple[int, int]] = []
    start = 0
    for sp in [*lay.spaces, len(text)]:
        if sp > start:
            piece = text[start:sp]
            if out and re.match(r"(?:const|volatile|&&?)::", piece):
                out[-1] = (out[-1][0], sp)
            else:
                out.append((start, sp))
        start = sp + 1
    return out


def _is_params(text: str, group: tuple[str, int, int], chunk_start: int) -> bool:
    o, s, e = group
    return o == "(" and s > chunk_start and text[s:e] != "(anonymous namespace)"


def _strip_args(segment: str) -> str:
    """A scope's name without its template arguments or parameters."""
    if segment[:1] in "({[":
        return segment
    lay = _layout(segment)
    for o, s, _ in lay.groups:
        if o in "<(" and s > 0:
            return segment[:s].strip()
    return segment.strip()


def _parse_text(text: str, form: str, demangled: str | None = None, original: str | None = None) -> KernelName:
    lay = _layout(text)
    chunks = _chunks(text, lay)
    if not chunks:
        return KernelName(original or text, form, "", (), text.strip(), (), None, demangled)
    fi = len(chunks) - 1
    for i in range(len(chunks) - 1, -1, -1):
        cs, ce = chunks[i]
        if any(cs <= g[1] < ce and _is_params(text, g, cs) for g in lay.groups):
            fi = i
            break
    else:
        while fi > 0 and text[chunks[fi][0] : chunks[fi][1]] in _QUALIFIERS:
            fi -= 1
    cs, ce = chunks[fi]
    ret = " ".join(text[a:b] for a, b in chunks[:fi])
    cuts = [c for c in lay.colons if cs <= c < ce]
    seg_starts = [cs] + [c + 2 for c in cuts]
    seg_ends = cuts + [ce]
    ss, se = seg_starts[-1], seg_ends[-1]
    namespaces = tuple(_strip_args(text[a:b]) for a, b in zip(seg_starts[:-1], seg_ends[:-1]))
    own = [g for g in lay.groups if ss <= g[1] < se]
    function = text[ss:se].strip()
    targs: tuple[str, ...] = ()
    params: tuple[str, ...] | None = None
    if function[:1] not in "({[" and own:
        first = own[0]
        if first[1] > ss:
            function = text[ss : first[1]].strip()
            rest = own
            if first[0] == "<":
                targs = _items(text, lay, first)
                rest = own[1:]
            if rest and rest[0][0] == "(":
                params = _items(text, lay, rest[0])
    if not function:
        function = text[ss:se].strip() or text.strip()
    if form != "mangled" and not (ret or namespaces or targs or params is not None) and "<" not in text:
        form = "plain"
    return KernelName(original or text, form, ret, namespaces, function, targs, params, demangled)


@lru_cache(maxsize=1 << 16)
def parse_kernel_name(name: str) -> KernelName:
    """The structure of a kernel name; never raises."""
    text = name if isinstance(name, str) else str(name)
    stripped = text.strip()
    if stripped.startswith(("_Z", "__Z")):
        full = demangle(stripped)
        if full is not None:
            return _parse_text(full, "mangled", full, text)
        parts = name_components(stripped)
        if parts:
            return KernelName(text, "mangled", "", tuple(parts[:-1]), parts[-1], (), None, None)
    return _parse_text(text, "c++")


_LITERAL_ARG = re.compile(r"[-\w. ]+|\([\w: ]+\)-?\w+")  # 128, true, 4096ul, unsigned int, (enum)1
SHORT_MAX = 80


def _short_arg(arg: str) -> str:
    if _LITERAL_ARG.fullmatch(arg):
        return arg
    inner = parse_kernel_name(arg).function
    return inner if re.fullmatch(r"[A-Za-z_$][\w$]*", inner) else "..."


def short_name(name: str, limit: int = SHORT_MAX) -> str:
    """The function name with its template arguments for messages: numbers, flags and plain types
    as written, a template or qualified type as its bare name, anything else (a lambda) as `...`.
    At most `limit` characters: a longer name is cut at a `_` or `,` and ends in `...`."""
    k = parse_kernel_name(name)
    out = k.function
    if k.template_args:
        shown: list[str] = []
        for a in k.template_args:
            s = _short_arg(a)
            if not (s == "..." and shown and shown[-1] == "..."):  # one "..." for a run
                shown.append(s)
        out += "<" + ", ".join(shown) + ">"
    if len(out) <= limit:
        return out
    head = out[: limit - 3]
    cut = max(head.rfind("_"), head.rfind(","))
    if cut >= limit // 2:
        head = head[:cut]
    return head.rstrip(" ,_") + "..."
