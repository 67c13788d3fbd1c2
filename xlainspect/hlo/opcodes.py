"""The opcodes XLA prints (`HLO_OPCODE_LIST` in xla/hlo/ir/hlo_opcode.h, newest main).

The model keeps any opcode as written; this list only lets the CLI say which ones this version of
xlainspect has not heard of (a newer XLA's), as a note rather than an error.
"""

from __future__ import annotations

from collections.abc import Iterable

KNOWN_OPCODES = frozenset(
    """
abs acos acosh add add-dependency after-all all-gather all-gather-done all-gather-start all-reduce
all-reduce-done all-reduce-start all-to-all and asin asinh async-done async-start async-update atan atan2
atanh batch-norm-grad batch-norm-inference batch-norm-training bitcast bitcast-convert broadcast call cbrt
ceil cholesky clamp count-leading-zeros collective-broadcast collective-permute collective-permute-done
collective-permute-start collective-reduce compare complex concatenate conditional constant convert
convolution copy copy-done copy-start cosine cosh custom-call divide domain dot dynamic-reshape
dynamic-slice dynamic-update-slice erf exponential exponential-minus-one fft floor fusion gather
get-dimension-size get-tuple-element imag infeed iota is-finite log log-plus-one logistic map maximum
minimum mulhi multiply negate not opt-barrier or outfeed pad parameter partition-id popcnt power
ragged-all-to-all ragged-dot real recv recv-done reduce reduce-precision reduce-scatter reduce-window
remainder replica-id reshape reverse rng rng-bit-generator rng-get-and-update-state round-nearest-afz
round-nearest-even rsqrt scaled-dot scan scatter select select-and-scatter send send-done
set-dimension-size shift-left shift-right-arithmetic shift-right-logical shuffle sign sine sinh slice sort
sqrt stochastic-convert subtract tan tanh topk transpose triangular-solve tuple while xor
""".split()
)

ASYNC_SUFFIXES = ("-start", "-update", "-done")
"""With async syntax sugar, `<wrapped opcode>-start/-update/-done` stands for async-start/update/done."""


def is_known_opcode(opcode: str) -> bool:
    """True for XLA's opcodes and their sugared async forms (`reduce-scatter-start`)."""
    if opcode in KNOWN_OPCODES:
        return True
    base = next((opcode.removesuffix(s) for s in ASYNC_SUFFIXES if opcode.endswith(s)), None)
    return base in KNOWN_OPCODES if base else False


def unknown_opcodes(opcodes: Iterable[str]) -> list[str]:
    """The opcodes (sorted, once each) that this list does not know: probably from a newer XLA."""
    return sorted({o for o in opcodes if not is_known_opcode(o)})


def name_opcode(name: str) -> str:
    """The opcode an instruction's default name starts with: XLA names an instruction `<opcode>.<n>` (the
    opcode's string, made unique by `NameUniquer` with a `.N` suffix), so `all-reduce-start.2` ->
    `all-reduce-start`; a name the program gave stands for itself up to its first `.`."""
    return name.partition(".")[0]
