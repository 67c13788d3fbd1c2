"""What one call of a module executes, op by op: FLOPs, transcendentals and bytes, with XLA's static
`HloCostAnalysis` figures beside (`xla_*`), and the roofline time of each op and module on a chip.

XLA's count (`static.Analysis`, its handlers in `handlers.HANDLERS`) follows
xla/service/hlo_cost_analysis.cc, so that a module's `xla_*` totals equal what jaxlib's
`hlo_module_cost_analysis` reports for the same text:

* elementwise ops count one per output element: as `transcendentals` for XLA's set (erf, exp,
  log, logistic, power, sqrt, cbrt, rsqrt, tanh, sin, cos, tan, expm1, log1p, atan2, and the newer
  acos, acosh, asin, asinh, atanh, cosh, sinh, as jaxlib 0.10.2 counts them), as `flops`
  for the rest (compare, select, clamp, convert, bitcast-convert, reduce-precision included);
  copy, reshape, broadcast, transpose, slices, pad, concatenate, gather, iota count none.
* dot: 2 x elements(result) x the product of the lhs contracting dims; convolution: 2 x
  (input features / feature groups) x output features x (batch / batch groups) x the valid
  (output position, kernel tap) pairs of each spatial dim.
* reduce: the reducer's cost x (elements(input) - elements(output)); reduce-window: x (window - 1)
  x output elements (XLA's reduce-then-broadcast window is special-cased); map: x output elements;
  select-and-scatter: select x source x (window - 1) + scatter x source; scatter: x update elements.
* sort: n x ceil(log2 n); fft: 8 x prod(floor(log2 length)) x elements; rng: transcendentals.
* all-reduce: one flop per output element; the other collectives none.
* fusion: the sum of its fused instructions; `call` and `async-start`: the called computation;
  `while`: body + condition once; `conditional`: the largest branch, per property.
* custom-call: -1 flops and -1 bytes each, XLA's "unknown".

Bytes: operand bytes + output bytes, zero for parameter, constant, get-tuple-element, bitcast, a
transpose that is a bitcast, after-all, add-dependency, domain; tuple its index table; slice and
dynamic-slice the output twice; dynamic-update-slice the update twice; a fusion its outputs plus
what it reads of each parameter (`FusionParameterReadBytes`: a parameter read only through
slices is charged the slices) plus large constants inside. Sizes are XLA's CPU size function (a
tuple is a table of 8-byte pointers), logical or (`padded_*`) with the layout's tile padding.

What one call executes (`executed.Executed`) is that count but for control flow and custom calls: a while
loop's body and condition times its trip count (`trip_count.trip_count`: `known_trip_count`, else
while_loop_analysis.cc's induction-variable pattern; once where none is known), a conditional's most
expensive branch, and custom calls by target as xla/service/gpu/model/gpu_hlo_cost_analysis.cc counts
them (cuBLAS gemms, cuDNN convolutions and fused attention, Triton kernels; one rule per module in `custom_calls`);
a target without a rule counts 0 and is listed. Each op runs `executions` times per call, the product
of the trip counts along its call chain.

Rows are the instructions of the entry and of the computations it runs as control flow, fusions
as one op.

The package holds one idea per module: `model` (the result types), `roofline`, `sizes` (byte
sizing), `operands` (what a count needs of an instruction), `static` (the HloCostAnalysis port) with
its `handlers` table and the larger handlers `convolution` and `fusion`, `executed` (what one call
executes), `custom_calls` (one rule per target family), `trip_count`, and `module` (a module's totals
and rows).
"""

from __future__ import annotations

from xlainspect.analysis.cost.model import Cost, Loop, ModuleCost, OpCost
from xlainspect.analysis.cost.module import CONTAINERS, control_flow_costs, module_cost, op_executions
from xlainspect.analysis.cost.sizes import POINTER_BYTES
from xlainspect.analysis.cost.static import ELEMENTWISE, NO_BYTES, TRANSCENDENTAL
from xlainspect.analysis.cost.trip_count import trip_count

__all__ = [
    "CONTAINERS",
    "ELEMENTWISE",
    "NO_BYTES",
    "POINTER_BYTES",
    "TRANSCENDENTAL",
    "Cost",
    "Loop",
    "ModuleCost",
    "OpCost",
    "control_flow_costs",
    "module_cost",
    "op_executions",
    "trip_count",
]
