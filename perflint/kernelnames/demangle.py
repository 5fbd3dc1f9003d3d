"""Itanium C++ ABI names (`_Z...`, as nvprof, nsys and ROCm's Kineto write some kernel names) decoded
to the text GNU c++filt prints, without needing c++filt.

`demangle` returns None on anything it cannot decode; `name_components` then still reads the
namespaces and the function name of a nested name. Neither raises on any string.
"""

from __future__ import annotations

import re

__all__ = ["demangle", "name_components"]


class _Fail(Exception):
    """Not a name this decoder understands (internal: never escapes the module)."""


_BUILTIN = {
    "v": "void", "w": "wchar_t", "b": "bool", "c": "char", "a": "signed char", "h": "unsigned char",
    "s": "short", "t": "unsigned short", "i": "int", "j": "unsigned int", "l": "long",
    "m": "unsigned long", "x": "long long", "y": "unsigned long long", "n": "__int128",
    "o": "unsigned __int128", "f": "float", "d": "double", "e": "long double", "g": "__float128",
    "z": "...",
}  # fmt: skip
_BUILTIN_D = {
    "d": "decimal64", "e": "decimal128", "f": "decimal32", "h": "half", "i": "char32_t",
    "s": "char16_t", "u": "char8_t", "a": "auto", "c": "decltype(auto)", "n": "decltype(nullptr)",
}  # fmt: skip
# Integer literal suffixes as c++filt prints them; other literal types print as "(type)value".
_INT_SUFFIX = {"i": "", "j": "u", "l": "l", "m": "ul", "x": "ll", "y": "ull"}
_STD_SUBS = {
    "a": "std::allocator", "b": "std::basic_string", "s": "std::string", "i": "std::istream",
    "o": "std::ostream", "d": "std::iostream",
}  # fmt: skip
# Operator codes: (spelling, arity in expressions).
_OPS = {
    "nw": ("new", 1), "na": ("new[]", 1), "dl": ("delete", 1), "da": ("delete[]", 1),
    "ps": ("+", 1), "ng": ("-", 1), "ad": ("&", 1), "de": ("*", 1), "co": ("~", 1),
    "pl": ("+", 2), "mi": ("-", 2), "ml": ("*", 2), "dv": ("/", 2), "rm": ("%", 2),
    "an": ("&", 2), "or": ("|", 2), "eo": ("^", 2), "aS": ("=", 2), "pL": ("+=", 2),
    "mI": ("-=", 2), "mL": ("*=", 2), "dV": ("/=", 2), "rM": ("%=", 2), "aN": ("&=", 2),
    "oR": ("|=", 2), "eO": ("^=", 2), "ls": ("<<", 2), "rs": (">>", 2), "lS": ("<<=", 2),
    "rS": (">>=", 2), "eq": ("==", 2), "ne": ("!=", 2), "lt": ("<", 2), "gt": (">", 2),
    "le": ("<=", 2), "ge": (">=", 2), "ss": ("<=>", 2), "nt": ("!", 1), "aa": ("&&", 2),
    "oo": ("||", 2), "pp": ("++", 1), "mm": ("--", 1), "cm": (",", 2), "pm": ("->*", 2),
    "pt": ("->", 2), "cl": ("()", 2), "ix": ("[]", 2), "qu": ("?", 3), "aw": ("co_await", 1),
}  # fmt: skip
_CLONE = re.compile(r"\.[A-Za-z_][A-Za-z_0-9]*(?:\.[0-9]+)*")


class _Fn(str):
    """A function type: prints as `ret (params)`; pointers and references go inside the parens."""

    ret: str
    params: str

    @staticmethod
    def make(ret: str, params: str) -> _Fn:
        f = _Fn(f"{ret} ({params})")
        f.ret, f.params = ret, params
        return f

    def declarator(self, inner: str) -> str:
        return f"{self.ret} ({inner})({self.params})"


class _Arr(str):
    """An array type: prints as `elem [dim]`."""

    elem: str
    dim: str

    @staticmethod
    def make(elem: str, dim: str) -> _Arr:
        a = _Arr(f"{elem} [{dim}]")
        a.elem, a.dim = elem, dim
        return a

    def declarator(self, inner: str) -> str:
        return f"{self.elem} ({inner}) [{self.dim}]"


class _Param(str):
    """A template parameter in the substitution table: c++filt resolves it where it is used, in
    the template arguments of that context, not where it was first seen."""

    position: int

    @staticmethod
    def make(text: str, position: int) -> _Param:
        p = _Param(text)
        p.position = position
        return p


def _wrap(t: str, sym: str) -> str:
    if isinstance(t, (_Fn, _Arr)):
        return t.declarator(sym)
    return t + sym


class _Demangler:
    def __init__(self, s: str) -> None:
        self.s = s
        self.p = 0
        self.subs: list[str] = []
        self.tparams: list[str] = []
        self.steps = 0

    # --- reading ---------------------------------------------------------------------------
    def peek(self, k: int = 0) -> str:
        i = self.p + k
        return self.s[i] if i < len(self.s) else ""

    def eat(self, t: str) -> bool:
        if self.s.startswith(t, self.p):
            self.p += len(t)
            return True
        return False

    def need(self, t: str) -> None:
        if not self.eat(t):
            raise _Fail(t)

    def tick(self) -> None:
        # Nested constructs recurse; a hostile string could recurse deep: bound the work.
        self.steps += 1
        if self.steps > 20000:
            raise _Fail("too complex")

    def number(self) -> int:
        neg = self.eat("n")
        start = self.p
        while self.peek().isdigit() and self.peek().isascii():
            self.p += 1
        if self.p == start:
            raise _Fail("number")
        n = int(self.s[start : self.p])
        return -n if neg else n

    def seq_id(self) -> int:
        """Base-36 id of S<id>_ / T<id>_ (absent: -1, so S_ is 0 after +1)."""
        start = self.p
        while (c := self.peek()) and (c.isdigit() or "A" <= c <= "Z"):
            self.p += 1
        self.need("_")
        txt = self.s[start : self.p - 1]
        return int(txt, 36) if txt else -1

    # --- names -----------------------------------------------------------------------------
    def encoding(self, local: bool = False) -> str:
        """A function's name and parameters; `local`: the scope of a local name, printed without
        its return type."""
        self.tick()
        saved = self.tparams
        self.tparams = []
        try:
            name, is_template, cv, kind = self.name(tag=True)
            if self.p >= len(self.s) or self.peek() in "E.":
                return name
            ret = ""
            if is_template and kind not in ("ctor", "dtor", "conv"):
                ret = self.type()
            params = self.bare_params()
            text = f"{name}({params}){cv}"
            if ret and not local:
                text = _Fn.make(ret, params).declarator(name) + cv if isinstance(ret, _Fn) else f"{ret} {text}"
            return text
        finally:
            self.tparams = saved

    def bare_params(self) -> str:
        types = []
        while self.p < len(self.s) and self.peek() not in "E.":
            types.append(self.type())
        if types == ["void"]:
            return ""
        return ", ".join(types)

    def name(self, tag: bool = False) -> tuple[str, bool, str, str]:
        """(text, ends in template args, cv/ref qualifiers of a member function, kind of last part)."""
        self.tick()
        c = self.peek()
        if c == "N":
            return self.nested_name(tag)
        if c == "Z":
            return self.local_name(tag)
        if c == "S" and self.peek(1) != "t":
            sub = self.substitution()
            if self.peek() != "I":
                raise _Fail("substitution name without args")
            return sub + self.template_args(tag), True, "", "name"
        std = self.eat("St")
        text, kind = self.unqualified("")
        if std:
            text = "std::" + text
        if self.peek() == "I":
            self.subs.append(text)
            return text + self.template_args(tag), True, "", kind
        return text, False, "", kind

    def nested_name(self, tag: bool) -> tuple[str, bool, str, str]:
        self.need("N")
        cv = self.cv_qualifiers()
        ref = " &&" if self.eat("O") else " &" if self.eat("R") else ""
        so_far = ""
        templated, kind = False, "name"
        while not self.eat("E"):
            self.tick()
            if self.p >= len(self.s):
                raise _Fail("unterminated nested name")
            c = self.peek()
            if c == "T":
                if so_far:
                    raise _Fail("prefix before template param")
                so_far, templated, kind = self.template_param(), False, "name"
            elif c == "I":
                if not so_far:
                    raise _Fail("args without a name")
                so_far, templated = so_far + self.template_args(tag), True
            elif c == "D" and self.peek(1) in "tT":
                so_far, templated, kind = self.decltype(), False, "name"
            elif c == "S":
                if so_far:
                    raise _Fail("substitution after a prefix")
                if self.eat("St"):
                    so_far = "std"
                else:
                    so_far = self.substitution()
                templated = False
                continue
            else:
                part, kind = self.unqualified(so_far)
                so_far = f"{so_far}::{part}" if so_far else part
                templated = False
            self.subs.append(so_far)
            self.eat("M")
        if not so_far or not self.subs:
            raise _Fail("empty nested name")
        self.subs.pop()
        return so_far, templated, cv + ref, kind

    def local_name(self, tag: bool) -> tuple[str, bool, str, str]:
        self.need("Z")
        enc = self.encoding(local=True)
        self.need("E")
        if self.eat("s"):
            self.discriminator()
            return f"{enc}::string literal", False, "", "name"
        if self.eat("d"):
            if self.peek() != "_":
                self.number()
            self.need("_")
        text, templated, cv, kind = self.name(tag)
        self.discriminator()
        return f"{enc}::{text}", templated, cv, kind

    def discriminator(self) -> None:
        if self.eat("__"):
            self.number()
            self.need("_")
        elif self.peek() == "_" and self.peek(1).isdigit():
            self.p += 2

    def unqualified(self, scope: str) -> tuple[str, str]:
        c = self.peek()
        kind = "name"
        if c.isdigit():
            text = self.source_name()
        elif c == "C" and self.peek(1) in "12345I":
            self.p += 2
            if self.s[self.p - 1] == "I":
                self.p += 1
            text, kind = _base_name(scope), "ctor"
        elif c == "D" and self.peek(1) in "0125":
            self.p += 2
            text, kind = "~" + _base_name(scope), "dtor"
        elif c == "U":
            text = self.unnamed_type()
        elif c == "L":
            self.p += 1
            return self.unqualified(scope)
        elif c == "D" and self.peek(1) == "C":
            self.p += 2
            names = []
            while not self.eat("E"):
                names.append(self.source_name())
            text = "[" + ", ".join(names) + "]"
        elif c.islower():
            text, kind = self.operator_name()
        else:
            raise _Fail(f"unqualified name at {c!r}")
        while self.peek() == "B":
            self.p += 1
            text += f"[abi:{self.source_name()}]"
        return text, kind

    def source_name(self) -> str:
        n = self.number()
        if n <= 0 or self.p + n > len(self.s):
            raise _Fail("source name length")
        text = self.s[self.p : self.p + n]
        self.p += n
        if text.startswith("_GLOBAL__N"):
            return "(anonymous namespace)"
        return text

    def operator_name(self) -> tuple[str, str]:
        code = self.s[self.p : self.p + 2]
        if code == "cv":
            self.p += 2
            return f"operator {self.type()}", "conv"
        if code == "li":
            self.p += 2
            return f'operator"" {self.source_name()}', "name"
        if code[:1] == "v" and code[1:].isdigit():
            self.p += 2
            return f"operator {self.source_name()}", "name"
        op = _OPS.get(code)
        if op is None:
            raise _Fail(f"operator {code!r}")
        self.p += 2
        sym = op[0]
        return ("operator " + sym if sym[0].isalpha() else "operator" + sym), "name"

    def unnamed_type(self) -> str:
        if self.eat("Ut"):
            n = 1 if self.peek() == "_" else self.number() + 2
            self.need("_")
            return f"{{unnamed type#{n}}}"
        self.need("Ul")
        while self.peek() == "T" and self.peek(1) in "ytnp":  # template parameter declarations
            self.p += 2
            if self.s[self.p - 1] == "n" or self.s[self.p - 1] == "p":
                self.type()
        types = []
        while not self.eat("E"):
            if self.p >= len(self.s):
                raise _Fail("unterminated lambda")
            types.append(self.type())
        n = 1 if self.peek() == "_" else self.number() + 2
        self.need("_")
        sig = "" if types == ["void"] else ", ".join(types)
        return f"{{lambda({sig})#{n}}}"

    def substitution(self) -> str:
        self.need("S")
        c = self.peek()
        if c in _STD_SUBS and c != "_" and not c.isdigit():
            self.p += 1
            return _STD_SUBS[c]
        i = self.seq_id() + 1
        if i >= len(self.subs):
            raise _Fail("substitution out of range")
        got = self.subs[i]
        if isinstance(got, _Param) and got.position < len(self.tparams):
            return self.tparams[got.position]
        return got

    def template_param(self) -> str:
        self.need("T")
        i = 0 if self.peek() == "_" else self.number() + 1
        self.need("_")
        # Unresolved: a generic lambda's parameter, or one this decoder cannot resolve.
        return _Param.make(self.tparams[i] if i < len(self.tparams) else "auto", i)

    def template_args(self, tag: bool = False) -> str:
        self.need("I")
        args: list[str] = []
        if tag:
            self.tparams = []
        while not self.eat("E"):
            self.tick()
            if self.p >= len(self.s):
                raise _Fail("unterminated template args")
            a = self.template_arg()
            args.append(a)
            if tag:
                self.tparams.append(a)
        text = ", ".join(a for a in args if a != "")
        return f"<{text} >" if text.endswith(">") else f"<{text}>"  # c++filt keeps "> >" apart

    def template_arg(self) -> str:
        c = self.peek()
        if c == "X":
            self.p += 1
            e = self.expression()
            self.need("E")
            return e
        if c == "L":
            return self.literal()
        if c == "J":
            self.p += 1
            items = []
            while not self.eat("E"):
                if self.p >= len(self.s):
                    raise _Fail("unterminated pack")
                items.append(self.template_arg())
            return ", ".join(items)
        return self.type()

    def literal(self) -> str:
        self.need("L")
        if self.eat("_Z") or self.eat("Z"):
            e = self.encoding()
            self.need("E")
            return e
        if self.eat("DnE"):
            return "nullptr"
        c = self.peek()
        if c in _INT_SUFFIX or c == "b" or c in "achst":
            self.p += 1
            neg = self.eat("n")
            start = self.p
            while self.peek().isdigit():
                self.p += 1
            digits = self.s[start : self.p]
            self.need("E")
            value = ("-" if neg else "") + digits
            if c == "b":
                return "true" if digits == "1" else "false" if digits == "0" else f"(bool){value}"
            if c in _INT_SUFFIX:
                return value + _INT_SUFFIX[c]
            return f"({_BUILTIN[c]}){value}"
        t = self.type()
        start = self.p
        while self.p < len(self.s) and self.peek() != "E":
            self.p += 1
        value = self.s[start : self.p].replace("n", "-", 1) if self.s[start : start + 1] == "n" else self.s[start : self.p]
        self.need("E")
        return f"({t}){value}" if value else t

    def cv_qualifiers(self) -> str:
        out = ""
        if self.eat("r"):
            out += " restrict"
        if self.eat("V"):
            out += " volatile"
        if self.eat("K"):
            out += " const"
        return out

    def decltype(self) -> str:
        self.need("D")
        if not (self.eat("t") or self.eat("T")):
            raise _Fail("decltype")
        e = self.expression()
        self.need("E")
        return f"decltype ({e})"

    # --- types -----------------------------------------------------------------------------
    def type(self) -> str:
        self.tick()
        c = self.peek()
        if c in _BUILTIN:
            self.p += 1
            return _BUILTIN[c]
        if c == "D":
            got = self.d_type()
            if got is not None:
                return got
        if c in "rVK":
            quals = self.cv_qualifiers()
            t = str(self.type()) + quals
            self.subs.append(t)
            return t
        if c in "PROCG":
            self.p += 1
            inner = self.type()
            sym = {"P": "*", "R": "&", "O": "&&", "C": " _Complex", "G": " _Imaginary"}[c]
            t = _wrap(inner, sym)
            self.subs.append(t)
            return t
        if c == "F":
            t = self.function_type()
            self.subs.append(t)
            return t
        if c == "A":
            self.p += 1
            dim = ""
            if self.peek().isdigit():
                dim = str(self.number())
            elif self.peek() != "_":
                dim = self.expression()
            self.need("_")
            t = _Arr.make(self.type(), dim)
            self.subs.append(t)
            return t
        if c == "M":
            self.p += 1
            cls = self.type()
            member = self.type()
            t = member.declarator(f"{cls}::*") if isinstance(member, (_Fn, _Arr)) else f"{member} {cls}::*"
            self.subs.append(t)
            return t
        if c == "T" and self.peek(1) in "seu":
            self.p += 2
            t, _, _, _ = self.name()
            self.subs.append(t)
            return t
        if c == "T":
            t = self.template_param()
            self.subs.append(t)
            if self.peek() == "I":
                t += self.template_args()
                self.subs.append(t)
            return t
        if c == "S":
            if self.peek(1) == "t":
                t, _, _, _ = self.name()
                self.subs.append(t)
                return t
            t = self.substitution()
            if self.peek() == "I":
                t += self.template_args()
                self.subs.append(t)
            return t
        if c == "u":
            self.p += 1
            t = self.source_name()
            if self.peek() == "I":
                t += self.template_args()
            self.subs.append(t)
            return t
        if c == "U":  # vendor qualifier on a type
            self.p += 1
            q = self.source_name()
            if self.peek() == "I":
                q += self.template_args()
            t = f"{self.type()} {q}"
            self.subs.append(t)
            return t
        if c == "N" or c == "Z" or c.isdigit():
            t, _, _, _ = self.name()
            self.subs.append(t)
            return t
        raise _Fail(f"type at {c!r}")

    def d_type(self) -> str | None:
        c1 = self.peek(1)
        if c1 in _BUILTIN_D:
            self.p += 2
            return _BUILTIN_D[c1]
        if c1 == "F":
            self.p += 2
            bits = self.number()
            if self.eat("b"):
                return "std::bfloat16_t"
            if self.eat("x"):
                return f"_Float{bits}x"
            self.need("_")
            return f"_Float{bits}"
        if c1 in "BU":
            self.p += 2
            size = str(self.number()) if self.peek().isdigit() else self.expression()
            self.need("_")
            t = f"{'unsigned ' if c1 == 'U' else ''}_BitInt({size})"
            self.subs.append(t)
            return t
        if c1 == "p":
            self.p += 2
            # A pack expansion of a known template parameter prints as the expanded list.
            from_param = self.peek() == "T"
            t = self.type()
            t = t if from_param and t != "auto" else t + "..."
            self.subs.append(t)
            return t
        if c1 in "tT":
            t = self.decltype()
            self.subs.append(t)
            return t
        if c1 == "v":
            self.p += 2
            dim = str(self.number()) if self.peek().isdigit() else self.expression()
            self.need("_")
            t = f"{self.type()} __vector({dim})"
            self.subs.append(t)
            return t
        if c1 in "xoOw":  # transaction_safe / exception specification before a function type
            self.p += 2
            if c1 == "O":
                self.expression()
                self.need("E")
            elif c1 == "w":
                while not self.eat("E"):
                    if self.p >= len(self.s):
                        raise _Fail("unterminated throw spec")
                    self.type()
            return self.type()
        return None

    def function_type(self) -> _Fn:
        self.need("F")
        self.eat("Y")
        ret = self.type()
        params = []
        while not self.eat("E"):
            if self.p >= len(self.s):
                raise _Fail("unterminated function type")
            if self.s.startswith("RE", self.p) or self.s.startswith("OE", self.p):
                self.p += 1  # ref-qualifier of a member function type: not printed
                continue
            params.append(self.type())
        return _Fn.make(ret, "" if params == ["void"] else ", ".join(params))

    # --- expressions (template arguments and decltype) -------------------------------------
    def expression(self) -> str:
        self.tick()
        c, code = self.peek(), self.s[self.p : self.p + 2]
        if c == "L":
            return self.literal()
        if c == "T":
            return self.template_param()
        if code in ("fp", "fL"):
            self.p += 2
            if code == "fL":
                self.number()
                self.need("p")
            self.cv_qualifiers()
            n = 1 if self.peek() == "_" else self.number() + 2
            self.need("_")
            return f"{{parm#{n}}}"
        if code == "sr":
            self.p += 2
            scope = self.type() if self.peek() != "N" else self.name()[0]
            part, _ = self.unqualified(scope)
            if self.peek() == "I":
                part += self.template_args()
            return f"{scope}::{part}"
        if code in ("st", "at"):
            self.p += 2
            return f"{'sizeof' if code == 'st' else 'alignof'} ({self.type()})"
        if code in ("sz", "az"):
            self.p += 2
            return f"{'sizeof' if code == 'sz' else 'alignof'} ({self.expression()})"
        if code == "sZ":
            self.p += 2
            return f"sizeof...({self.template_param() if self.peek() == 'T' else self.expression()})"
        if code == "cv":
            self.p += 2
            t = self.type()
            if self.eat("_"):
                items = []
                while not self.eat("E"):
                    items.append(self.expression())
                return f"({t})({', '.join(items)})"
            return f"({t})({self.expression()})"
        if code in ("sc", "dc", "cc", "rc"):
            self.p += 2
            kind = {"sc": "static", "dc": "dynamic", "cc": "const", "rc": "reinterpret"}[code]
            t = self.type()
            return f"{kind}_cast<{t}>({self.expression()})"
        if code == "cl":
            self.p += 2
            callee = self.expression()
            args = []
            while not self.eat("E"):
                if self.p >= len(self.s):
                    raise _Fail("unterminated call")
                args.append(self.expression())
            return f"{callee}({', '.join(args)})"
        if code in ("dt", "pt"):
            self.p += 2
            obj = self.expression()
            member, _ = self.unqualified("")
            return f"{obj}{'.' if code == 'dt' else '->'}{member}"
        if code == "nx":
            self.p += 2
            return f"noexcept ({self.expression()})"
        if code in _OPS:
            sym, arity = _OPS[code]
            self.p += 2
            if arity == 1:
                return f"{sym}({self.expression()})"
            if arity == 2:
                a, b = self.expression(), self.expression()
                return f"({a}){sym}({b})"
            a, b, d = self.expression(), self.expression(), self.expression()
            return f"({a})?({b}):({d})"
        if c.isdigit():
            part = self.source_name()
            if self.peek() == "I":
                part += self.template_args()
            return part
        raise _Fail(f"expression at {code!r}")


def _base_name(scope: str) -> str:
    """The unqualified name of a scope (a constructor's name), template args dropped."""
    last = scope.rsplit("::", 1)[-1]
    return last.split("<", 1)[0]


def _clones(suffix: str) -> str:
    out = []
    pos = 0
    for m in _CLONE.finditer(suffix):
        if m.start() != pos:
            break
        out.append(f" [clone {m.group(0)}]")
        pos = m.end()
    rest = suffix[pos:]
    return "".join(out) + (f" {rest}" if rest else "")


def demangle(name: str) -> str | None:
    """The GNU c++filt text of an Itanium-mangled name; None when it is not one this decodes."""
    if not isinstance(name, str):
        return None
    s = name.strip()
    if s.startswith("__Z"):  # Mach-O style leading underscore
        s = s[1:]
    if not s.startswith("_Z"):
        return None
    d = _Demangler(s)
    d.p = 2
    try:
        text = d.encoding()
    except (_Fail, RecursionError, ValueError, IndexError):
        return None
    rest = s[d.p :]
    if rest and not rest.startswith("."):
        return None
    return text + _clones(rest)


def name_components(name: str) -> list[str]:
    """The nested name's parts (namespaces, classes, function) of a mangled name, read without
    decoding the rest: what is left when `demangle` cannot decode a template argument."""
    s = name.strip() if isinstance(name, str) else ""
    if s.startswith("__Z"):
        s = s[1:]
    if not s.startswith("_Z"):
        return []
    d = _Demangler(s)
    d.p = 2
    out: list[str] = []
    try:
        d.eat("L")
        if d.eat("N"):
            d.cv_qualifiers()
            d.eat("R") or d.eat("O")
            if d.eat("St"):
                out.append("std")
            while d.peek().isdigit() or d.peek() == "L":
                d.eat("L")
                out.append(d.source_name())
        elif d.peek().isdigit():
            out.append(d.source_name())
        elif d.eat("St") and d.peek().isdigit():
            out += ["std", d.source_name()]
    except (_Fail, ValueError, IndexError):
        pass
    return out
