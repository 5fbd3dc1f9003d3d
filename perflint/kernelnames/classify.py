"""`classify_kernel(name, vendor)`: a kernel's category, library, math dtype and Tensor Core use,
decided by the first row of `conventions.ROWS` that matches the parsed name.

The rules below read each library's own naming convention: dtype tokens of cuBLAS/cuDNN xmma
names, CUTLASS 2.x names, Tensile's type letters and `_MI` MFMA token, and template arguments
read as types (the element type argument of a CUTLASS or Composable Kernel kernel), never a
substring of a functor or parameter type.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache

from perflint.kernelnames.conventions import ROWS, SCOPE_LIBRARIES, Row
from perflint.kernelnames.parse import KernelName, parse_kernel_name

__all__ = ["MATRIX_CATEGORIES", "KernelClass", "classify_kernel"]

MATRIX_CATEGORIES = ("gemm", "conv", "attention")
_OTHER = Row("other", "", r"", "other", note="no row matched")


@dataclass(frozen=True)
class KernelClass:
    category: str
    library: str  # "" when no library convention says
    dtype: str | None  # math dtype read from the name (None: the name does not say)
    tensor_cores: bool | None  # Tensor Cores / matrix cores; None: not a matrix kernel, or unknown
    simt: bool  # an fp32 GEMM/convolution on the SIMT pipes, by its name
    row: str  # id of the table row that decided
    note: str
    helper: bool  # a library helper beside matrix kernels (split-K reduction, workspace init)
    layout_conversion: bool  # converts tensors between NCHW and NHWC
    name: KernelName  # the kernel name, parsed
    identity: KernelName  # what the row matched: the name, or the template argument that names the kernel
    via: str | None  # the row whose template argument named the kernel (cutlass.kernel, ...)


# --- element types of template arguments ----------------------------------------------------
_ELEMENT = {
    "float": "fp32", "double": "fp64",
    "__half": "fp16", "half": "fp16", "c10::Half": "fp16", "at::Half": "fp16", "cutlass::half_t": "fp16",
    "_Float16": "fp16", "ck::half_t": "fp16", "ck_tile::half_t": "fp16", "__hip_half": "fp16",
    "__nv_bfloat16": "bf16", "nv_bfloat16": "bf16", "__hip_bfloat16": "bf16", "hip_bfloat16": "bf16",
    "c10::BFloat16": "bf16", "at::BFloat16": "bf16", "cutlass::bfloat16_t": "bf16", "std::bfloat16_t": "bf16",
    "__bf16": "bf16", "ck::bhalf_t": "bf16", "ck_tile::bf16_t": "bf16",
    "cutlass::tfloat32_t": "tf32",
    "__nv_fp8_e4m3": "fp8", "__nv_fp8_e5m2": "fp8", "cutlass::float_e4m3_t": "fp8", "cutlass::float_e5m2_t": "fp8",
    "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8", "c10::Float8_e5m2fnuz": "fp8",
    "__hip_fp8_e4m3_fnuz": "fp8", "__hip_fp8_e5m2_fnuz": "fp8", "ck::f8_t": "fp8", "ck::bf8_t": "fp8",
    "ck_tile::fp8_t": "fp8", "ck_tile::bf8_t": "fp8",
    "int8_t": "int8", "signed char": "int8", "cutlass::int8_t": "int8",
}  # fmt: skip
# Composable Kernel spells bf16 as unsigned short (ck::bhalf_t), which mangled names show as such.
_CK_ELEMENT = {**_ELEMENT, "unsigned short": "bf16"}
_TYPE_TOKENS = {
    "f16": "fp16", "fp16": "fp16", "bf16": "bf16", "f32": "fp32", "fp32": "fp32", "tf32": "tf32",
    "f64": "fp64", "fp64": "fp64", "e4m3": "fp8", "e5m2": "fp8", "fp8": "fp8", "i8": "int8", "s8": "int8",
    "int8": "int8", "u8": "int8",
}  # fmt: skip


def _bare_type(t: str) -> str:
    """A value type without cv-qualifiers (a pointer or reference stays one: not an element type)."""
    t = re.sub(r"\b(?:const|volatile)\b", "", t)
    return " ".join(t.split())


def _element(arg: str, table: dict[str, str]) -> str | None:
    return table.get(_bare_type(arg))


def _walk(k: KernelName, limit: int = 48) -> Iterator[tuple[str, KernelName]]:
    """Template arguments depth first (text and parsed), at most `limit` of them."""
    stack: list[tuple[str, int]] = [(a, 1) for a in reversed(k.template_args)]
    seen = 0
    while stack and seen < limit:
        text, depth = stack.pop()
        seen += 1
        parsed = parse_kernel_name(text)
        yield text, parsed
        if depth < 4 and not parsed.function.startswith(("{", "[", "(")):
            stack.extend((a, depth + 1) for a in reversed(parsed.template_args))


def _first_element(k: KernelName, table: dict[str, str]) -> str | None:
    for text, _ in _walk(k):
        got = _element(text, table)
        if got:
            return got
    return None


def _tokens(fn: str) -> list[str]:
    return [t for t in fn.split("_") if t]


def _token_dtype(fn: str) -> str | None:
    for t in _tokens(fn):
        got = _TYPE_TOKENS.get(t.lower())
        if got:
            return got
    return None


# --- naming-convention rules ----------------------------------------------------------------
_XMMA_TYPES = re.compile(r"(?:tf32|bf16|f16|f32|f64|e4m3|e5m2|s8|u8|i8|s32|i32)+")
_XMMA_FIRST = re.compile(r"tf32|bf16|f16|f32|f64|e4m3|e5m2|s8|u8|i8|s32|i32")


def _xmma_dtype(k: KernelName) -> str | None:
    """sm80_xmma_gemm_<A><B>_<math><acc>_<C>: the math type is the first of the second group
    (f32f32_tf32f32_f32 = tf32, bf16bf16_bf16f32_f32 = bf16, f32f32_f32f32_f32 = fp32)."""
    groups = [t for t in _tokens(k.function) if _XMMA_TYPES.fullmatch(t)]
    if not groups:
        return None
    pick = groups[1] if len(groups) > 1 else groups[0]
    first = _XMMA_FIRST.match(pick)
    return _TYPE_TOKENS.get(first.group(0)) if first else None


def _xmma_tc(k: KernelName, vendor: str | None) -> bool | None:
    return "ffma" not in _tokens(k.function)  # cuBLAS's fp32 xmma kernels run FFMA, not MMA


def _xmma_traits(k: KernelName) -> tuple[str | None, bool | None]:
    """xmma Kernel_traits<Ampere_hmma_tf32_traits<...>, ...>: the first argument names the
    instruction (hmma/imma = Tensor Cores, ffma = SIMT) and the type."""
    first = k.arg(0)
    if first is None:
        return None, None
    toks = [t.lower() for t in _tokens(first.function)]
    dtype = next((_TYPE_TOKENS[t] for t in toks if t in _TYPE_TOKENS), None)
    if any(t in ("hmma", "imma", "gmma", "dmma") for t in toks):
        return dtype, True
    if any(t in ("ffma", "hfma", "fma") for t in toks):
        return dtype, False
    return dtype, None


_ARCH_SM = {"maxwell": 50, "kepler": 35, "pascal": 60, "volta": 70, "turing": 75, "ampere": 80, "ada": 89,
            "hopper": 90, "blackwell": 100}  # fmt: skip
_BLAS_ARCH = re.compile(
    r"(?:cudnn_(?:infer_|train_)?)?(?P<arch>[a-z]+|sm\d+)_(?:(?P<type>fp16|bf16|tf32|int8|i8|fp32)_)?"
    r"(?P<letter>gc|[shdcizg])(?P<mma>\d*)(?:gemm|cudnn)"
)


def _sm(arch: str) -> int | None:
    if arch.startswith("sm") and arch[2:].isdigit():
        return int(arch[2:])
    return _ARCH_SM.get(arch)


def _blas_arch(k: KernelName) -> tuple[str | None, bool | None]:
    """<arch>_[<type>_]<letter><mma>gemm: an MMA shape (884, 1688, 16816, 8816) is a Tensor Core
    kernel; without one, s/c/gc/h are SIMT. Without a type token the letter says: h = fp16,
    s884/s1688 before Ampere = fp16 inputs, s1688 from Ampere = tf32, s alone = fp32."""
    m = _BLAS_ARCH.match(k.function)
    if m is None:
        return None, None
    sm = _sm(m["arch"])
    letter, mma = m["letter"], m["mma"]
    tc: bool | None = True if mma else (None if letter in "dz" else False)
    if m["type"]:
        return _TYPE_TOKENS[m["type"]], tc
    if letter == "h":
        return "fp16", tc
    if letter == "i":
        return "int8", tc
    if letter in ("d", "z"):
        return "fp64", tc
    if letter in ("c", "gc"):
        return "fp32", tc
    if letter == "s" and not mma:
        return "fp32", tc
    if letter == "s" and sm is not None:
        if sm < 80 and mma in ("884", "1688"):
            return "fp16", tc
        if sm >= 80 and mma == "1688":
            return "tf32", tc
    return None, tc


def _blas_letter(k: KernelName) -> str | None:
    m = re.match(r"(?:magma_)?([sdhcz])gemm", k.function)
    return {"s": "fp32", "d": "fp64", "h": "fp16", "c": "fp32", "z": "fp64"}[m.group(1)] if m else None


def _cudnn_letter(k: KernelName) -> str | None:
    m = re.search(r"_([sh])cudnn", k.function)
    return {"s": "fp32", "h": "fp16"}[m.group(1)] if m else None


def _convolve(k: KernelName) -> str | None:
    m = re.match(r"\w*?_convolve_(sgemm|dgemm|hhgemm)", k.function)
    return {"sgemm": "fp32", "dgemm": "fp64", "hhgemm": "fp16"}[m.group(1)] if m else None


def _cublas_tensor(k: KernelName) -> str | None:
    """The element type of the cublasGemvTensor*<T> argument (gemmk1 / gemv / gemmSN kernels;
    their first argument is the compute type, float even for half data)."""
    for _, p in _walk(k, 24):
        if p.function.startswith("cublasGemvTensor") and p.template_args:
            return _element(p.template_args[0], _ELEMENT)
    return None


_LITERAL = re.compile(r"-?\d+[uUlL]*|true|false|\(\w[\w: ]*\)-?\d+")


def _type_arg(k: KernelName) -> str | None:
    """The element type among the leading template arguments (`scalar_t` of ATen's and cuDNN's
    kernel templates, after any numbers): the first argument that is neither a number nor an
    element type (a functor, a metadata struct) ends the search."""
    for a in k.template_args:
        got = _element(a, _ELEMENT)
        if got:
            return got
        if not _LITERAL.fullmatch(a.strip()):
            return None
    return None


_CUTLASS_INSTR = re.compile(r"(?P<acc>[shdicz]?)(?P<shape>\d+(?:x\d+)*)?(?P<itype>tf32|f16|bf16|i8|s8|e4m3|e5m2)?"
                            r"(?:sp)?(?:gemm|fprop|dgrad|wgrad)")


def _cutlass_named(k: KernelName) -> tuple[str | None, bool | None]:
    """cutlass_<sm>_<opclass>_[<input>_]<acc><instr>gemm_[<output>_]...: tensorop/wmma = Tensor
    Cores, simt = SIMT. Without an input type, s1688 on sm80+ is tf32 (fp16 on sm75); CUTLASS 3.x
    profiler names put the A type right after the instruction token."""
    toks = _tokens(k.function)
    gi = next((i for i, t in enumerate(toks) if _CUTLASS_INSTR.fullmatch(t)), None)
    if gi is None:
        return None, None
    sm = next((int(t.removeprefix("sm")) for t in toks[1:gi] if t.removeprefix("sm").isdigit()), None)
    opclass = {t for t in toks[1:gi]}
    tc: bool | None = False if "simt" in opclass else True if opclass & {"tensorop", "wmma", "bstensorop", "sptensorop"} else None
    instr = _CUTLASS_INSTR.fullmatch(toks[gi])
    assert instr is not None
    if gi > 0 and toks[gi - 1] in _TYPE_TOKENS:
        return _TYPE_TOKENS[toks[gi - 1]], tc
    if instr["itype"]:
        return _TYPE_TOKENS[instr["itype"]], tc
    if toks[0].startswith("cutlass3x") and gi + 1 < len(toks):
        # block-scaled kernels write <scale>x<data> (ue8m0xe4m3): the data type is the input's
        after = toks[gi + 1].rsplit("x", 1)[-1] if re.fullmatch(r"ue\d+m\d+x\w+", toks[gi + 1]) else toks[gi + 1]
        if after in _TYPE_TOKENS:
            return _TYPE_TOKENS[after], tc
    acc, shape = instr["acc"], instr["shape"] or ""
    if tc is False or not shape:
        return {"s": "fp32", "d": "fp64", "h": "fp16", "i": "int8"}.get(acc), tc
    if acc == "h":
        return "fp16", tc
    if acc == "s" and shape == "1688" and sm is not None:
        return ("tf32" if sm >= 80 else "fp16"), tc
    if acc == "s" and shape == "884":
        return "fp16", tc
    return None, tc


_MMA_POLICY = re.compile(r"\w*(?:Sm9\d|Sm1\d\d|Gmma|GMMA|Umma|UMMA|SM80_16x8|SM90_|SM100_|OpClassTensorOp|OpClassWmmaTensorOp)\w*")
_FMA_POLICY = re.compile(r"\w*(?:UniversalFMA|OpClassSimt)\w*")


def _cutlass3(k: KernelName) -> tuple[str | None, bool | None]:
    """GemmUniversal<Shape, CollectiveMma<Policy, Tile, ElementA, ...>, ...>: ElementA is the input
    type; an MMA policy or atom (Sm90 GMMA, SM80_16x8x16, OpClassTensorOp) means Tensor Cores."""
    dtype = None
    tc: bool | None = None
    for _, p in _walk(k, 96):
        if dtype is None and p.function == "CollectiveMma" and len(p.template_args) > 2:
            dtype = _element(p.template_args[2], _ELEMENT)
        if tc is None and _MMA_POLICY.fullmatch(p.function):
            tc = True
        elif tc is None and _FMA_POLICY.fullmatch(p.function):
            tc = False
    return dtype or _first_element(k, _ELEMENT), tc


_TENSILE_TYPES = (("F8B8", "fp8"), ("B8F8", "fp8"), ("F8", "fp8"), ("B8", "fp8"), ("I8", "int8"), ("4xi8", "int8"),
                  ("S", "fp32"), ("D", "fp64"), ("H", "fp16"), ("B", "bf16"), ("X", "tf32"), ("C", "fp32"), ("Z", "fp64"))  # fmt: skip


def _tensile(k: KernelName) -> tuple[str | None, bool | None]:
    """Cijk_<A layout>_<B layout>_<types>_...: the type token starts with the input type (S, H, B,
    D, I8, F8; SB = fp32 batched, BBS = bf16 in, bf16 out, fp32 compute); a _MI<M>x<N>x<K> token
    is an MFMA matrix-core instruction."""
    toks = _tokens(k.function)
    tc = any(re.fullmatch(r"MI\d+x\d+x\d+(?:x\d+)?|MFMA\w*", t) for t in toks)
    i = 1
    while i < len(toks) and re.fullmatch(r"[AB][a-z]+C?", toks[i]):
        i += 1
    dtype = None
    if i < len(toks):
        head = toks[i]
        dtype = next((d for p, d in _TENSILE_TYPES if head.startswith(p)), None)
    return dtype, tc


def _nvjet(k: KernelName) -> str | None:
    """nvjet_[smNN_]<types>_...: the type token (hsh, tst, qqtst) starts with the input type."""
    for t in _tokens(k.function)[1:3]:
        if re.fullmatch(r"[a-z]{3,5}", t) and not t.startswith("sm"):
            return {"h": "fp16", "t": "bf16", "q": "fp8", "e": "fp8", "i": "int8"}.get(t[0])
    return None


# trtllm-gen's type words (E4m3, Bfloat16, Fp32, MxE4m3): E2m1 is fp4, a type perflint does not rank.
_TG_WORD = re.compile(r"(?:Mx)?(E\dm\d|Bfloat16|Fp16|Fp32|Fp64|Int8|UInt8|Int32|Int4|UE8m0)", re.IGNORECASE)
_TG_GROUP = re.compile(rf"(?:{_TG_WORD.pattern})+", re.IGNORECASE)
_TG_DTYPE = {"e4m3": "fp8", "e5m2": "fp8", "bfloat16": "bf16", "fp16": "fp16", "fp32": "fp32", "fp64": "fp64",
             "int8": "int8", "uint8": "int8"}  # fmt: skip


def _tg_word(group: str) -> str | None:
    first = _TG_WORD.match(group)
    return _TG_DTYPE.get(first.group(1).lower()) if first else None


def _trtllm_gen(k: KernelName) -> str | None:
    """<kind>_[<C>_]<A><B>_<acc>_t<tile>...: the group before the accumulator's starts with A's type
    (bmm_E4m3E4m3_Fp32 = fp8, GemmKernel_Bfloat16_E4m3_Fp32 = fp8 in, bf16 out)."""
    groups: list[str] = []
    for t in _tokens(k.function)[1:]:
        if not _TG_GROUP.fullmatch(t):
            break
        groups.append(t)
    if not groups:
        return None
    return _tg_word(groups[-2] if len(groups) > 1 else groups[0])


def _trtllm_fmha(k: KernelName) -> str | None:
    """fmhaSm100aKernel_Qkv<T>O<T>... or _Q<T>Kv<T>O<T>...: Q's type is BMM1's input (a KV cache
    in fp4 is widened to Q's type)."""
    m = re.search(rf"_Q(?:kv)?({_TG_WORD.pattern})", k.function, re.IGNORECASE)
    return _tg_word(m.group(1)) if m else None


def _name_or_arg(k: KernelName) -> str | None:
    """A type token of the function name (fp8_gemm, gemm_e4m3), else the leading template type."""
    return _token_dtype(k.function) or _type_arg(k)


# Tokens of a function name that name a matrix instruction: NVIDIA's HMMA/IMMA, Hopper's (W)GMMA,
# Blackwell's UMMA (tcgen05), CUTLASS's tensorop; AMD's MFMA / XDLOPS / WMMA.
_MMA_TOKENS = frozenset({"mma", "hmma", "imma", "qmma", "wgmma", "gmma", "umma", "utcmma", "tcgen05", "tensorop", "tensorcore",
                         "mfma", "xdl", "xdlops", "wmma"})  # fmt: skip
# Template arguments that only an MMA kernel carries: CUTLASS 3.x schedules and mainloops for
# GMMA/UMMA, MMA atoms (SM90_64x128x32_F32E4M3E4M3_SS), the tensor-op class.
_MMA_ARG = re.compile(r"KernelTmaWarpSpecialized\w*|KernelPtrArrayTmaWarpSpecialized\w*|Mainloop(?:Sm9\d|Sm1\d\d)\w*|"
                      r"\w*(?:Gmma|GMMA|Umma|UMMA)\w*|SM(?:80|89|90|100|120)_\d+x\d+x\d+\w*|OpClassTensorOp|OpClassWmmaTensorOp")


def _mma_mark(k: KernelName, vendor: str | None) -> bool | None:
    """A kernel matched by its name alone uses matrix units when its name or a template argument
    names an MMA instruction or an MMA-only CUTLASS schedule; otherwise unknown."""
    if any(t.lower() in _MMA_TOKENS for t in _tokens(k.function)):
        return True
    for _, p in _walk(k, 96):
        if _MMA_ARG.fullmatch(p.function):
            return True
    return None


def _miopen_igemm(k: KernelName, vendor: str | None) -> bool | None:
    toks = _tokens(k.function)
    if any(re.fullmatch(r"gtcx\d*", t) for t in toks):
        return True  # XDLOPS: MFMA matrix cores
    if "gtc" in toks:
        return False
    return None


def _ck_tc(k: KernelName, vendor: str | None) -> bool | None:
    toks = set(_tokens(k.function))
    if toks & {"xdl", "xdlops", "wmma", "mfma"}:
        return True
    if "dl" in toks:
        return False
    return None


def _xformers_tc(k: KernelName, vendor: str | None) -> bool | None:
    m = re.search(r"_sm(\d+)(?:_|$)", k.function)
    if m is None:
        return None
    if int(m.group(1)) < 70:
        return False
    return None if _token_dtype(k.function) == "fp32" else True


def _triton_ogs(k: KernelName) -> str | None:
    """_matmul_ogs_<layout>_<a>x<b>x<c>_...: the first operand's type (bf16xbf16xmxfp4 = bf16)."""
    for t in _tokens(k.function):
        parts = t.split("x")
        if len(parts) >= 2 and all(re.fullmatch(r"[a-z]+\d*[a-z0-9]*", p) for p in parts):
            return _TYPE_TOKENS.get(parts[0])
    return None


_DTYPE_RULES: dict[str, Callable[[KernelName], str | None]] = {
    "xmma": _xmma_dtype,
    "xmma_traits": lambda k: _xmma_traits(k)[0],
    "blas_arch": lambda k: _blas_arch(k)[0],
    "blas_letter": _blas_letter,
    "cudnn_letter": _cudnn_letter,
    "convolve": _convolve,
    "cublas_tensor": _cublas_tensor,
    "type_arg": _type_arg,
    "elem": lambda k: _first_element(k, _ELEMENT),
    "ck": lambda k: _first_element(k, _CK_ELEMENT),
    "cutlass_named": lambda k: _cutlass_named(k)[0],
    "cutlass3": lambda k: _cutlass3(k)[0],
    "tensile": lambda k: _tensile(k)[0],
    "nvjet": _nvjet,
    "name_token": lambda k: _token_dtype(k.function),
    "triton_ogs": _triton_ogs,
    "trtllm_gen": _trtllm_gen,
    "trtllm_fmha": _trtllm_fmha,
    "name_or_arg": _name_or_arg,
}
_TC_RULES: dict[str, Callable[[KernelName, str | None], bool | None]] = {
    "xmma": _xmma_tc,
    "xmma_traits": lambda k, v: _xmma_traits(k)[1],
    "blas_arch": lambda k, v: _blas_arch(k)[1],
    "cutlass_named": lambda k, v: _cutlass_named(k)[1],
    "cutlass3": lambda k, v: _cutlass3(k)[1],
    "tensile": lambda k, v: _tensile(k)[1],
    "miopen_igemm": _miopen_igemm,
    "ck": _ck_tc,
    "xformers": _xformers_tc,
    "mma_mark": _mma_mark,
}


def rule_names() -> tuple[set[str], set[str]]:
    """The dtype and Tensor Core rule names rows may cite (the table's test checks them)."""
    return set(_DTYPE_RULES), set(_TC_RULES)


# --- matching --------------------------------------------------------------------------------
_COMPILED: list[tuple[Row, re.Pattern[str] | None, re.Pattern[str]]] = [
    (r, None if r.scope is None else re.compile(r.scope), re.compile(r.function)) for r in ROWS
]
_VIA_DEPTH = 3


def _match(k: KernelName, depth: int = 0) -> tuple[Row, KernelName, Row | None]:
    """(deciding row, the name it matched, the template row that led there)."""
    scope = k.scope
    for row, scope_rx, fn_rx in _COMPILED:
        if scope_rx is not None and scope_rx.fullmatch(scope) is None:
            continue
        if fn_rx.match(k.function) is None:
            continue
        if not row.via_arg:
            return row, k, None
        if depth < _VIA_DEPTH:
            for a in k.template_args:
                if _LITERAL.fullmatch(a.strip()):
                    continue  # a number or a flag
                got, ident, _ = _match(parse_kernel_name(a), depth + 1)
                if got is not _OTHER:
                    return got, ident, row
                break
        return row, k, None
    return _OTHER, k, None


def _library(row: Row, k: KernelName) -> str:
    if row.library:
        return row.library
    for ns in k.namespaces:
        if ns.startswith("("):
            continue
        return next((lib for prefix, lib in SCOPE_LIBRARIES if ns == prefix), "")
    return ""


def _rule_value(spec: object, rules: Mapping[str, Callable[..., object]], *args: object) -> object:
    if isinstance(spec, str) and spec.startswith("rule:"):
        return rules[spec[5:]](*args)
    return spec


@lru_cache(maxsize=1 << 16)
def classify_kernel(name: str, vendor: str | None = None) -> KernelClass:
    """The category, library, dtype and Tensor Core use of a kernel, by the structure of its name.
    `vendor` ("nvidia", "amd"): the device's, where the verdict depends on it (Triton's tl.dot)."""
    vendor = vendor if vendor in ("nvidia", "amd") else None
    k = parse_kernel_name(name)
    row, ident, via = _match(k)
    dtype = _rule_value(row.dtype, _DTYPE_RULES, ident)
    tc: object
    if isinstance(row.tc, dict):
        tc = row.tc.get(vendor) if vendor else None
    else:
        tc = _rule_value(row.tc, _TC_RULES, ident, vendor)
    if row.helper or row.category not in MATRIX_CATEGORIES:
        tc = None
    simt = tc is False and dtype == "fp32" and row.category in ("gemm", "conv")
    return KernelClass(
        category=row.category,
        library=_library(row, ident) or (via.library if via else "") or _library(row, k),
        dtype=dtype if isinstance(dtype, str) else None,
        tensor_cores=tc if isinstance(tc, bool) else None,
        simt=simt,
        row=row.id,
        note=row.note,
        helper=row.helper,
        layout_conversion=row.layout,
        name=k,
        identity=ident,
        via=via.id if via else None,
    )
