"""The explicit, ordered pass pipeline that turns an imported model into the integer graph.

    run_passes(model, *, calibration=None, seed=0) -> (Model, PassReport)

Order (each pass one module):
 1. name_nodes          every node gets a unique name (the report follows names)
 2. remove_identities   Identity, inference-mode Dropout
 3. fold_constants      nodes computable before running (shape chains, Constant ...)
 3b. fold_if            If of constant cond -> the chosen branch's nodes; unroll_loop:
                        Loop of constant trip count (cond absent or constant true) -> its
                        body's copies; unroll_scan: Scan of static length -> its body's
                        copies (then 2 and 3 again, until none is left)
 3b'. widen_float16     a float16 model computes in float32 (exact widening; Casts at
                        its float16 inputs and outputs), so it is quantized like any other
 3b''. fuse_integer_requantization  MatMulInteger/ConvInteger -> Cast -> Mul(constant) ->
                        [Add(constant)] -> [Relu|Clip] -> Q -> QMatMul/QConv (normalize_qoperator's
                        integer-product pattern, first: the per-channel and island passes
                        below would take its float scale and bias as a batch norm)
 3c. drop_empty_values  a node whose results have no elements (static shapes with a 0) -> empty
                        constants; a Concat's empty inputs dropped (Phi-3's [1, H, S, 0]
                        pass-through Slice of its partial rotary embedding);
                        drop_products_by_one: Mul(x, ones), Div(x, ones) -> x (BLOOM's
                        ALiBi bias times baddbmm's beta = 1);
     fold_scalar_dequantize  DQ of a one-element 8-bit constant read by element-wise ops
                        -> its float value (onnxruntime's QDQ of scalar constants);
                        fold_scalar_quantize: Q of one such constant read by QLinearAdd/
                        QLinearMul -> its integer value (a QTable next);
     finite_masks       a Where's -inf mask value read by Add -> Softmax -> float's lowest
                        finite number (torch's exported attention masks); arithmetic_masks:
                        such a Where of two constants -> arithmetic on its Cast condition
                        (one table once quantized); after 7:
                        quantized_isnan, Where(IsNaN(DQ(x)), a, b) -> b
 3c'. expand_as_concat  Expand of a float/8-bit computed tensor along axes of size 1
                        (grouped-query attention's repeat_kv) -> Concats of copies (exact);
                        fold_quantized_constants: DQ(u), u computed from constants only
                        (through Q/DQ too: a QDQ model's rotary cos/sin tables) -> DQ(value);
                        embedding_scale: Mul(Gather(float table, ids), scalar constant) ->
                        Gather(table * scalar) (exact: Gemma's, BART's embedding scale)
 3d. rms_mean          ReduceMean(Pow(x, 2)) over the last axis (T5's, LLaMA's RMS norm;
                        in a static quantized model x a DQ's result), x not a Sub -> MatMul
                        by a [H, 1] constant of 1/H;
                        l2_normalize (earlier, before expand_as_concat): Div(x, [Expand](
                        Clip(ReduceL2(x, last axis), eps))) -> Mul(x, Reciprocal(Clip(Sqrt(
                        MatMul(Pow(x, 2), ones[H, 1]))))) (F.normalize: XCiT's, EdgeNeXt's);
                        spatial_l2 (after embedding_scale): ReduceL2(x, H, W) -> Sqrt(P *
                        GlobalAveragePool(Mul(x, x))), its channel mean broadcast back ->
                        MatMul(1/C [C, C]) (ConvNeXtV2's GRN);
                        sub_constant (there too): Sub(x, C) -> Add(x, -C), Sub(C, x) ->
                        Add(Neg(x), C) for a whole-tensor constant C (YOLO's anchor grid);
                        einsum_matmul (there too): a two-operand Einsum -> Transpose/Reshape
                        around one MatMul (Funnel's relative attention);
                        group_norm: GroupNormalization (opset 18/21) of constant scale and
                        bias -> Reshape, InstanceNormalization, Reshape, Mul, Add (torch's
                        TorchScript form);
                        instance_norm: InstanceNormalization of [N, C, T] -> the decomposed
                        layer normalization over the last axis (-> LAYERNORM)
 4. spatial_mean        ReduceMean over all spatial axes -> GlobalAveragePool (+ Reshape);
                        GlobalMaxPool -> MaxPool over the whole spatial extent
 4a. decomposed_softmax ReduceMax/Sub/Exp/ReduceSum/Div over the last axis -> Softmax;
     decompose_lrn      float LRN -> Mul(x, x) -> banded 1x1 Conv -> Pow -> Mul
     decompose_prelu    float PRelu of a per-channel slope -> Relu(x) + Min(x, 0) * a
 4b. conv_transpose     ConvTranspose -> Convs over its input (polyphase: one per stride
                        phase, then their interleave) or over its zero-inserted input
 4b'. float_linear_resize  float linear Resize -> [Transpose] MatMul(constant interpolation
                        matrix) [Transpose] per resized axis (QMatMuls once quantized)
 4b''. expand_float_constant  a float constant that Add/Mul broadcast over their other
                        operand, of fewer axes or neither per channel nor along the last axis
                        (a group norm's [C, 1] scale, Swin's [1, H, S, S] bias over the
                        windows) -> in that operand's rank or shape (exact)
 4b'''. constant_before_reshape  an Add/Mul of a float constant on a Reshape to rank 5+
                        (Swin's shifted-window mask over [B, nW, heads, N, N]) -> done
                        before the Reshape, the constant reshaped like its input (exact)
 4b''''. pad_as_concat  a constant Pad of a float tensor along one axis -> Concat with
                        constant blocks (exact; an integer layout op once quantized)
 4c. fold_bias_add      Add/Sub of a per-channel constant after a float Conv -> its bias
 4d. channel_affine     a chain of per-channel affine ops (BatchNormalization, Mul/Add/Sub/
                        Div of a per-channel constant) -> one BatchNormalization after a
                        Conv/Gemm (folded next), else Mul(s[1, C, 1, 1]) -> Add(t) (QMul, QAdd)
 5. fold_batchnorm      BatchNormalization into the preceding Conv/Gemm (float)
 5b. split_layernorm    LayerNormalization(x, scale, bias) of float constants over the last
                        axis -> LayerNormalization(x, 1) -> Mul(scale) -> Add(bias): the
                        normalized tensor becomes a value (quantized on its own below);
                        moments_layernorm: the E[x^2] - E[x]^2 form (Flax/jax2tf) over the
                        last axis -> the decomposed ReduceMean ... Div form, then gamma, beta
 6. unroll_recurrent    RNN/GRU/LSTM with a static sequence -> per-step float
                        MatMul/Add/Gather, gate functions, Mul, Concat (quantized below);
                        com.microsoft DynamicQuantizeLSTM -> DynamicQuantizeLinear +
                        MatMulInteger per gate
 6a. divide_computed   float models: Div of two computed tensors (not a normalization's
                        d / Sqrt, not one tensor's function) -> Mul(a, Reciprocal(b)) (a
                        table of b, its range cut at 1 / s_b, and a QMul once quantized)
 6b. expand_computed_operand  float models: an Add/Mul operand broadcast over the other
                        (neither per channel nor along the last axis: GPT-2's causal mask
                        [1, 1, S, S] over the scores) -> read through Expand to its shape;
                        expand_as_concat again: such an Expand of a float value (a per-head
                        norm's 1/rms [1, S, H, 1]) -> Concats of copies
 7. quantize_float      float models (no quantization in the graph): post-training
                        quantization, expressed as QuantizeLinear/DequantizeLinear pairs
                        (types are inferred again afterwards); quantized models: the same
                        for the float island of their unrolled RNN/GRU/LSTM layers only
                        (recurrent_island: its borders take the model's own parameters),
                        then (dynamic_island) a dynamic model's float part, then
                        (layernorm_island) a QDQ model's split LayerNormalization: its
                        normalized value and gamma's result; then (channel_island) a
                        quantized model's per-channel Mul/Add (its float batch norm); then
                        (float_island) float element-wise ops, pools and constant MatMuls
                        between DQ and Q whose result is read twice (a QOperator export's
                        HardSwish) or with a MatMul (a QDQ decoder's RMS norm)
 7b. quantize_before_layout  Q(layout(a, b)) -> layout(Q(a), Q(b)) (exact): the layout
                        ops then move integers (a zero-inserted ConvTranspose's fill blocks,
                        Concats of requantized inputs)
 7b'. dequantize_after_layout  Split/Slice/nearest Resize and Upsample/Gather(computed
                        indices)(DQ(u)) -> DQ(op(u)) (exact): they select integers; a reader
                        Q of DQ's parameters is dropped, others requantize (a QTable; before
                        an upsampling, on its input's elements); also through the Reshape/
                        Transpose/... leading to a Slice or Split that does, and through the
                        layout tree a Slice or Split leads to a Q by (one level per run,
                        repeated until nothing changes: a QOperator fused qkv projection)
 7b''. quantized_linear_resize  DQ -> linear Resize -> Q -> per resized axis [Transpose]
                        DQ MatMul(DQ(int8 interpolation matrix)) Q [Transpose] (QMatMuls);
                        softmax_to_last_axis: DQ -> Softmax(inner axis, opset >= 13) -> Q
                        -> Transpose, the softmax over the last axis, Transpose (exact)
 7c. fuse_layernorm    DQ -> layer normalization over the last axis (LayerNormalization, or
                        its decomposed ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div chain with
                        any Q/DQ between its steps) -> Q -> QLayerNorm (LAYERNORM); gamma
                        and beta stay a Mul and an Add of a last-axis constant (QMul, QAdd)
 7d. widen_conv_integer a ConvInteger of uint8 weights whose W - w_zp overflows int8 ->
                        ConvInteger(A, [W - 128; ones]) + (128 - w_zp) * input sums (int32)
 8. normalize_qoperator QLinearConv, QGemm, QLinearAdd ... -> systolic ops
 9. fuse_integer_matmul a MatMulInteger of a constant B left by normalize_qoperator
                        (dynamic quantization) -> QMatMulInt, int32 out; a computed zero
                        point's correction on the host (Cast, Mul, Add)
 9b. expand_constant_operand  DQ(8-bit constant) an Add/Mul broadcasts over its other
                        operand -> the constant in that operand's rank or whole shape
                        (a group norm's [C, 1] scale, LeViT's and Swin's attention biases)
10. fuse_qdq            DQ -> op -> [Relu|Clip] -> Q -> systolic ops (QMul for the product
                        of two quantized tensors), integer layout ops
10b. fuse_gather        DQ -> Gather(constant indices) -> Q of the same parameters -> the
                        Gather of the integers (an unrolled layer's time steps)
11. fuse_activations    quantized-domain Relu/Clip after a systolic op -> its y_lo/y_hi
12. fuse_softmax        DQ -> Softmax -> Q and QLinearSoftmax -> QSoftmax (exp table)
13. fuse_tables         DQ -> element-wise float region -> Q -> QTable (activation tables)
14. compose_tables      QTable of QTable, QMul/QAdd of functions of one tensor -> one QTable
                        (after a first eliminate_dead: the fusions' unread DequantizeLinear
                        nodes would count as other readers of a table)
15. eliminate_dead      unread nodes and constants
16. norm_row_order      Reshape(x -> [N, G, C/G*H*W]) -> QLayerNorm [-> QTable] -> Reshape back
                        (torch's GroupNorm) -> each group's row read position-major through
                        Transposes (the same result; views, and for G > 1 an accelerator copy,
                        instead of host copies)
Then the graph is rebound to operator versions and its shapes inferred again; the model
imports the "systolic" domain (version 1) when it uses the fused ops. Every original node
without a recorded outcome ends up "host" (with the reason a pattern gave, if any) or
"layout" (an integer layout op).
"""

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from systolic.ir import SYSTOLIC_DOMAIN, DataType, Model
from systolic.mapper.binding import bind_graph
from systolic.mapper.dim_binding import DEFAULT_MAX_TENSOR_BYTES
from systolic.mapper.passes.channel_affine import channel_affine
from systolic.mapper.passes.channel_affine_ptq import channel_island
from systolic.mapper.passes.compose_tables import compose_tables
from systolic.mapper.passes.constant_before_reshape import constant_before_reshape
from systolic.mapper.passes.conv_transpose import conv_transpose_to_conv
from systolic.mapper.passes.decompose_lrn import decompose_lrn
from systolic.mapper.passes.decompose_prelu import decompose_prelu
from systolic.mapper.passes.decomposed_softmax import decomposed_softmax
from systolic.mapper.passes.dequantize_after_layout import dequantize_after_layout
from systolic.mapper.passes.divide_computed import divide_computed
from systolic.mapper.passes.dynamic_island import fusion_entries, quantize_dynamic_island
from systolic.mapper.passes.einsum_matmul import einsum_to_matmul
from systolic.mapper.passes.eliminate_dead import eliminate_dead
from systolic.mapper.passes.embedding_scale import embedding_scale
from systolic.mapper.passes.empty_values import drop_empty_values
from systolic.mapper.passes.expand_as_concat import expand_as_concat
from systolic.mapper.passes.expand_computed_operand import expand_computed_operand
from systolic.mapper.passes.expand_constant_operand import (
    expand_constant_operand,
    expand_float_constant,
)
from systolic.mapper.passes.float_island import float_remnants
from systolic.mapper.passes.fold_batchnorm import fold_batchnorm
from systolic.mapper.passes.fold_bias_add import fold_bias_add
from systolic.mapper.passes.fold_constants import fold_constants
from systolic.mapper.passes.fold_if import fold_if
from systolic.mapper.passes.fuse_activations import fuse_activations
from systolic.mapper.passes.fuse_gather import fuse_gather
from systolic.mapper.passes.fuse_integer_matmul import fuse_integer_matmul
from systolic.mapper.passes.fuse_layernorm import fuse_layernorm, split_layernorm
from systolic.mapper.passes.fuse_qdq import LAYOUT_OPS, fuse_qdq
from systolic.mapper.passes.fuse_softmax import fuse_softmax
from systolic.mapper.passes.fuse_tables import fuse_tables
from systolic.mapper.passes.group_norm import group_norm_to_instance_norm
from systolic.mapper.passes.instance_norm import instance_norm_to_layernorm
from systolic.mapper.passes.l2_normalize import l2_normalize_to_matmul
from systolic.mapper.passes.layernorm_moments import moments_layernorm
from systolic.mapper.passes.layernorm_ptq import layernorm_island
from systolic.mapper.passes.linear_resize import float_linear_resize, quantized_linear_resize
from systolic.mapper.passes.masked_softmax import (
    arithmetic_masks,
    finite_masks,
    quantized_isnan,
)
from systolic.mapper.passes.multiply_by_one import drop_products_by_one
from systolic.mapper.passes.name_nodes import name_nodes
from systolic.mapper.passes.norm_row_order import norm_row_order
from systolic.mapper.passes.normalize_qoperator import (
    fuse_integer_requantization,
    normalize_qoperator,
)
from systolic.mapper.passes.pad_as_concat import pad_as_concat
from systolic.mapper.passes.quantize_before_layout import quantize_before_layout
from systolic.mapper.passes.quantize_float import is_quantized, quantize_float
from systolic.mapper.passes.quantized_constants import fold_quantized_constants
from systolic.mapper.passes.recurrent_island import recurrent_island
from systolic.mapper.passes.remove_identities import remove_identities
from systolic.mapper.passes.report import HOST, LAYOUT, PassReport
from systolic.mapper.passes.rms_mean import rms_mean_to_matmul
from systolic.mapper.passes.scalar_dequantize import (
    fold_scalar_dequantize,
    fold_scalar_quantize,
)
from systolic.mapper.passes.softmax_axis import softmax_to_last_axis
from systolic.mapper.passes.spatial_l2 import spatial_l2_to_pool
from systolic.mapper.passes.spatial_mean import spatial_mean_to_pool
from systolic.mapper.passes.sub_constant import sub_constant_to_add
from systolic.mapper.passes.unroll_loop import unroll_loop
from systolic.mapper.passes.unroll_recurrent import unroll_recurrent_region
from systolic.mapper.passes.unroll_scan import unroll_scan
from systolic.mapper.passes.widen_conv_integer import widen_conv_integer
from systolic.mapper.passes.widen_float16 import widen_float16
from systolic.mapper.shape_inference import infer_shapes

__all__ = ["finalize", "run_passes"]

DEFAULT_HOST_REASON = "no fused integer pattern applies: runs on the host"


def run_passes(
    model: Model,
    *,
    calibration: Sequence[Mapping[str, np.ndarray]] | None = None,
    seed: int = 0,
) -> tuple[Model, "PassReport"]:
    """Return the integer graph of `model` and the report of what happened to each node.

    `calibration`: input feeds for post-training quantization (of a float model, or of a
    quantized model's unrolled float recurrent layers); None calibrates on a seeded random
    set (see `quantize_float`). `seed` seeds that set.
    """
    model = name_nodes(model)
    report = PassReport((node.name, node.op_id) for node in model.graph.nodes)
    model = remove_identities(model, report)
    model = fold_constants(model, report)
    while (inlined := unroll_scan(unroll_loop(fold_if(model, report), report), report)
           ) is not model:
        model = fold_constants(remove_identities(finalize(inlined), report), report)
    if (widened := widen_float16(model, report)) is not model:
        model = fold_constants(remove_identities(finalize(widened), report), report)
    if (integer := fuse_integer_requantization(model, report)) is not model:
        model = finalize(integer)  # before channel_affine and the islands take its Mul/Add
    for rewrite in (drop_empty_values, drop_products_by_one, fold_scalar_dequantize,
                    fold_scalar_quantize, finite_masks, arithmetic_masks, l2_normalize_to_matmul,
                    sub_constant_to_add, einsum_to_matmul,
                    expand_as_concat, fold_quantized_constants,
                    embedding_scale,
                    spatial_l2_to_pool,
                    rms_mean_to_matmul, group_norm_to_instance_norm,
                    instance_norm_to_layernorm, spatial_mean_to_pool,
                    decomposed_softmax, decompose_lrn, decompose_prelu, conv_transpose_to_conv,
                    float_linear_resize, expand_float_constant, constant_before_reshape, pad_as_concat,
                    fold_bias_add, channel_affine):
        rewritten = rewrite(model, report)
        if rewritten is not model:
            model = finalize(rewritten)
    if (folded := fold_batchnorm(model, report)) is not model:  # a MatMul fold adds an Add
        model = finalize(folded)
    refused_norms: dict[str, str] = {}
    for rewrite_norms in (split_layernorm, moments_layernorm):
        if (normal := rewrite_norms(model, report, refused_norms)) is not model:
            model = finalize(normal)
    unrolled, island = unroll_recurrent_region(model, report)
    if unrolled is not model:
        model = finalize(unrolled)
    quantized = is_quantized(model)
    if not quantized:
        if (divided := divide_computed(model, report)) is not model:
            model = finalize(divided)  # a / b -> a * Reciprocal(b): a table and a QMul
        if (expanded := expand_computed_operand(model, report)) is not model:
            model = finalize(expanded)  # a broadcast operand made explicit for PTQ
            if (copied := expand_as_concat(model, report)) is not model:
                model = finalize(copied)  # of a float value: Concats of copies
        model = finalize(quantize_float(model, report, calibration=calibration, seed=seed,
                                        entries=fusion_entries(model.graph)))
    elif island:
        region = recurrent_island(model, island)
        model = finalize(quantize_float(model, report, calibration=calibration, seed=seed,
                                        region=region))
    if (dynamic := quantize_dynamic_island(model, report, calibration=calibration, seed=seed,
                                           done=island)) is not model:
        model = finalize(dynamic)
    if norms := layernorm_island(model.graph):  # a QDQ model's split LayerNormalization
        model = finalize(quantize_float(model, report, calibration=calibration, seed=seed,
                                        region=norms))
    if quantized and (channels := channel_island(model.graph)):  # a QDQ model's float BN
        model = finalize(quantize_float(model, report, calibration=calibration, seed=seed,
                                        region=channels))
    if quantized and (remnants := float_remnants(model.graph)):  # float results read twice
        model = finalize(quantize_float(model, report, calibration=calibration, seed=seed,
                                        region=remnants))
    if (guarded := quantized_isnan(model, report)) is not model:  # IsNaN after a softmax
        model = finalize(guarded)
    if (hoisted := quantize_before_layout(model, report)) is not model:
        model = finalize(hoisted)
    while (selecting := dequantize_after_layout(model, report)) is not model:
        model = finalize(selecting)  # a layout tree is taken one level per run
    if (interpolated := quantized_linear_resize(model, report)) is not model:
        model = finalize(interpolated)
    if (rows := softmax_to_last_axis(model, report)) is not model:
        model = finalize(rows)
    model = fuse_layernorm(model, report, refused_norms)
    if (widened := widen_conv_integer(model, report)) is not model:  # uint8 weights' zp
        model = finalize(widened)
    model = normalize_qoperator(model, report)
    model = fuse_integer_matmul(model, report)
    if (expanded := expand_constant_operand(model, report)) is not model:
        model = finalize(expanded)
    model = fuse_qdq(model, report)
    model = fuse_gather(model, report)
    model = fuse_activations(model, report)
    model = fuse_softmax(model, report)
    model = fuse_tables(model, report)
    model = compose_tables(eliminate_dead(model, report), report)
    model = eliminate_dead(model, report)
    model = finalize(model)
    if (ordered := norm_row_order(model, report)) is not model:  # whole-sample norm rows
        model = finalize(eliminate_dead(ordered, report))
    for label, why in refused_norms.items():  # the later fusions noted their own patterns
        report.note(label, why)
    _settle_report(model, report)
    return dataclasses.replace(model, host_reasons=_host_reasons(model, report)), report


def _host_reasons(model: Model, report: PassReport) -> tuple[tuple[str, str], ...]:
    """Return why the passes left each node of the integer graph on the host, when they
    know more than that no pattern applies (a numeric limit, a graph input's quantization)."""
    reasons = []
    for node in model.graph.nodes:
        fate = report.fate(node.name)
        created = report.created_reason(node.name) if fate is None else None
        if created:
            reasons.append((node.name, created))
        if fate is None or fate.action != HOST:
            continue
        if fate.reason not in ("", DEFAULT_HOST_REASON):
            reasons.append((node.name, fate.reason))
    return tuple(reasons)


def finalize(model: Model) -> Model:
    """Return `model` importing the systolic domain if it uses it, every node bound to its
    operator version and every value's type inferred again."""
    graph = model.graph
    opsets = dict(model.opsets)
    if any(node.domain == SYSTOLIC_DOMAIN for node in graph.nodes):
        opsets[SYSTOLIC_DOMAIN] = 1
    graph = dataclasses.replace(graph, value_info=())
    graph, ops = bind_graph(graph, opsets)
    graph = infer_shapes(graph, ops, max_tensor_bytes=DEFAULT_MAX_TENSOR_BYTES)
    return dataclasses.replace(model, graph=graph, opsets=tuple(opsets.items()))


def _settle_report(model: Model, report: PassReport) -> None:
    graph = model.graph
    for node in graph.nodes:
        if report.fate(node.name) is not None:
            continue
        first_type = graph.type_of(node.inputs[0]) if node.inputs and node.inputs[0] else None
        dtype = first_type.dtype if first_type is not None else None
        if node.op_type in LAYOUT_OPS and dtype in (DataType.UINT8, DataType.INT8):
            report.record(node.name, LAYOUT, reason="runs on integers (addressing or COPY)")
        else:
            report.record(node.name, HOST, reason=report.note_of(node.name)
                          or _HOST_REASONS.get(node.op_type, DEFAULT_HOST_REASON))


_HOST_REASONS = {
    "QuantizeLinear": "quantizes a float value (a graph input) for the integer ops",
    "DequantizeLinear": "dequantizes an integer result for a float reader (a host op or a graph output)",
}
