"""The formal inputs and outputs of every operator the reference implements (its schema).

`check_arity` holds a node against its operator's signature before any op sees it: how many
inputs and outputs it may name and which of them may be omitted (""). The default-domain
signatures are those of the ONNX operator schemas (onnx.defs, checked by
tests/systolic/reference/test_signatures.py); com.microsoft's are onnxruntime's contrib schemas,
and the systolic domain's are this tool's own operators.

A signature is a string of formal names: "X" is required, "B?" optional (may be "" or left
off at the end), "inputs+" variadic (one or more, always last).
"""

from systolic.errors import ModelError

__all__ = ["SIGNATURES", "Signature", "check_arity", "signature_of"]

Signature = tuple[str, str]
"""(inputs, outputs) of one operator version, as formal-name strings."""

SIGNATURES: dict[tuple[str, str], tuple[tuple[int, str, str], ...]] = {
    ("", "Abs"): ((1, "X", "Y"),),
    ("", "Acos"): ((7, "input", "output"),),
    ("", "Acosh"): ((9, "input", "output"),),
    ("", "Add"): ((1, "A B", "C"),),
    ("", "AffineGrid"): ((20, "theta size", "grid"),),
    ("", "And"): ((1, "A B", "C"),),
    ("", "ArgMax"): ((1, "data", "reduced"),),
    ("", "ArgMin"): ((1, "data", "reduced"),),
    ("", "Asin"): ((7, "input", "output"),),
    ("", "Asinh"): ((9, "input", "output"),),
    ("", "Atan"): ((7, "input", "output"),),
    ("", "Atanh"): ((9, "input", "output"),),
    ("", "AveragePool"): ((1, "X", "Y"),),
    ("", "BatchNormalization"): (
        (1, "X scale B mean var", "Y mean? var? saved_mean? saved_var?"),
        (14, "X scale B input_mean input_var", "Y running_mean? running_var?"),
    ),
    ("", "BitShift"): ((11, "X Y", "Z"),),
    ("", "BitwiseAnd"): ((18, "A B", "C"),),
    ("", "BitwiseNot"): ((18, "X", "Y"),),
    ("", "BitwiseOr"): ((18, "A B", "C"),),
    ("", "BitwiseXor"): ((18, "A B", "C"),),
    ("", "BlackmanWindow"): ((17, "size", "output"),),
    ("", "Cast"): ((1, "input", "output"),),
    ("", "CastLike"): ((15, "input target_type", "output"),),
    ("", "Ceil"): ((1, "X", "Y"),),
    ("", "Celu"): ((12, "X", "Y"),),
    ("", "CenterCropPad"): ((18, "input_data shape", "output_data"),),
    ("", "Clip"): ((1, "input", "output"), (11, "input min? max?", "output")),
    ("", "Compress"): ((9, "input condition", "output"),),
    ("", "Concat"): ((1, "inputs+", "concat_result"),),
    ("", "Constant"): ((1, "", "output"),),
    ("", "ConstantOfShape"): ((9, "input", "output"),),
    ("", "Conv"): ((1, "X W B?", "Y"),),
    ("", "ConvInteger"): ((10, "x w x_zero_point? w_zero_point?", "y"),),
    ("", "ConvTranspose"): ((1, "X W B?", "Y"),),
    ("", "Cos"): ((7, "input", "output"),),
    ("", "Cosh"): ((9, "input", "output"),),
    ("", "CumSum"): ((11, "x axis", "y"),),
    ("", "DFT"): ((17, "input dft_length?", "output"), (20, "input dft_length? axis?", "output")),
    ("", "DepthToSpace"): ((1, "input", "output"),),
    ("", "DequantizeLinear"): ((10, "x x_scale x_zero_point?", "y"),),
    ("", "Det"): ((11, "X", "Y"),),
    ("", "Div"): ((1, "A B", "C"),),
    ("", "Dropout"): (
        (1, "data", "output mask?"),
        (12, "data ratio? training_mode?", "output mask?"),
    ),
    ("", "DynamicQuantizeLinear"): ((11, "x", "y y_scale y_zero_point"),),
    ("", "Einsum"): ((12, "Inputs+", "Output"),),
    ("", "Elu"): ((1, "X", "Y"),),
    ("", "Equal"): ((1, "A B", "C"),),
    ("", "Erf"): ((9, "input", "output"),),
    ("", "Exp"): ((1, "input", "output"),),
    ("", "Expand"): ((8, "input shape", "output"),),
    ("", "EyeLike"): ((9, "input", "output"),),
    ("", "Flatten"): ((1, "input", "output"),),
    ("", "Floor"): ((1, "X", "Y"),),
    ("", "Gather"): ((1, "data indices", "output"),),
    ("", "GatherElements"): ((11, "data indices", "output"),),
    ("", "GatherND"): ((11, "data indices", "output"),),
    ("", "Gelu"): ((20, "X", "Y"),),
    ("", "Gemm"): ((1, "A B C", "Y"), (11, "A B C?", "Y")),
    ("", "GlobalAveragePool"): ((1, "X", "Y"),),
    ("", "GlobalLpPool"): ((1, "X", "Y"),),
    ("", "GlobalMaxPool"): ((1, "X", "Y"),),
    ("", "Greater"): ((1, "A B", "C"),),
    ("", "GreaterOrEqual"): ((12, "A B", "C"),),
    ("", "GridSample"): ((16, "X grid", "Y"),),
    ("", "GroupNormalization"): ((18, "X scale bias", "Y"),),
    ("", "HammingWindow"): ((17, "size", "output"),),
    ("", "HannWindow"): ((17, "size", "output"),),
    ("", "HardSigmoid"): ((1, "X", "Y"),),
    ("", "HardSwish"): ((14, "X", "Y"),),
    ("", "Hardmax"): ((1, "input", "output"),),
    ("", "Identity"): ((1, "input", "output"),),
    ("", "If"): ((1, "cond", "outputs+"),),
    ("", "InstanceNormalization"): ((1, "input scale B", "output"),),
    ("", "IsInf"): ((10, "X", "Y"),),
    ("", "IsNaN"): ((9, "X", "Y"),),
    ("", "LRN"): ((1, "X", "Y"),),
    ("", "GRU"): (
        (1, "X W R B? sequence_lens? initial_h?", "Y? Y_h"),
        (3, "X W R B? sequence_lens? initial_h?", "Y? Y_h?"),
    ),
    ("", "LSTM"): ((1, "X W R B? sequence_lens? initial_h? initial_c? P?", "Y? Y_h? Y_c?"),),
    ("", "LayerNormalization"): ((17, "X Scale B?", "Y Mean? InvStdDev?"),),
    ("", "LeakyRelu"): ((1, "X", "Y"),),
    ("", "Less"): ((1, "A B", "C"),),
    ("", "LessOrEqual"): ((12, "A B", "C"),),
    ("", "Log"): ((1, "input", "output"),),
    ("", "Loop"): ((1, "M? cond? v_initial+", "v_final_and_scan_outputs+"),),
    ("", "LogSoftmax"): ((1, "input", "output"),),
    ("", "LpNormalization"): ((1, "input", "output"),),
    ("", "LpPool"): ((1, "X", "Y"),),
    ("", "MatMul"): ((1, "A B", "Y"),),
    ("", "MatMulInteger"): ((10, "A B a_zero_point? b_zero_point?", "Y"),),
    ("", "Max"): ((1, "data_0+", "max"),),
    ("", "MaxPool"): ((1, "X", "Y"), (8, "X", "Y Indices?")),
    ("", "Mean"): ((1, "data_0+", "mean"),),
    ("", "MeanVarianceNormalization"): ((9, "X", "Y"),),
    ("", "MelWeightMatrix"): (
        (17, "num_mel_bins dft_length sample_rate lower_edge_hertz upper_edge_hertz", "output"),
    ),
    ("", "Min"): ((1, "data_0+", "min"),),
    ("", "Mish"): ((18, "X", "Y"),),
    ("", "Mod"): ((10, "A B", "C"),),
    ("", "Mul"): ((1, "A B", "C"),),
    ("", "Neg"): ((1, "X", "Y"),),
    ("", "NonMaxSuppression"): (
        (10, "boxes scores max_output_boxes_per_class? iou_threshold? score_threshold?",
         "selected_indices"),
    ),
    ("", "NonZero"): ((9, "X", "Y"),),
    ("", "Not"): ((1, "X", "Y"),),
    ("", "OneHot"): ((9, "indices depth values", "output"),),
    ("", "Or"): ((1, "A B", "C"),),
    ("", "PRelu"): ((1, "X slope", "Y"),),
    ("", "Pad"): (
        (1, "data", "output"),
        (11, "data pads constant_value?", "output"),
        (18, "data pads constant_value? axes?", "output"),
    ),
    ("", "Pow"): ((1, "X Y", "Z"),),
    ("", "QLinearConv"): (
        (10, "x x_scale x_zero_point w w_scale w_zero_point y_scale y_zero_point B?", "y"),
    ),
    ("", "QLinearMatMul"): (
        (10, "a a_scale a_zero_point b b_scale b_zero_point y_scale y_zero_point", "y"),
    ),
    ("", "QuantizeLinear"): ((10, "x y_scale y_zero_point?", "y"),),
    ("", "RMSNormalization"): ((23, "X scale", "Y"),),
    ("", "RNN"): ((1, "X W R B? sequence_lens? initial_h?", "Y? Y_h?"),),
    ("", "Range"): ((11, "start limit delta", "output"),),
    ("", "Reciprocal"): ((1, "X", "Y"),),
    ("", "ReduceL1"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceL2"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceLogSum"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceLogSumExp"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceMax"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceMean"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceMin"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceProd"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "ReduceSum"): ((1, "data", "reduced"), (13, "data axes?", "reduced")),
    ("", "ReduceSumSquare"): ((1, "data", "reduced"), (18, "data axes?", "reduced")),
    ("", "Relu"): ((1, "X", "Y"),),
    ("", "Reshape"): ((1, "data", "reshaped"), (5, "data shape", "reshaped")),
    ("", "Resize"): (
        (10, "X scales", "Y"),
        (11, "X roi scales sizes?", "Y"),
        (13, "X roi? scales? sizes?", "Y"),
    ),
    ("", "ReverseSequence"): ((10, "input sequence_lens", "Y"),),
    ("", "RoiAlign"): ((10, "X rois batch_indices", "Y"),),
    ("", "Round"): ((11, "X", "Y"),),
    ("", "STFT"): ((17, "signal frame_step window? frame_length?", "output"),),
    ("", "Scan"): (
        (8, "sequence_lens? initial_state_and_scan_inputs+", "final_state_and_scan_outputs+"),
        (9, "initial_state_and_scan_inputs+", "final_state_and_scan_outputs+"),
    ),
    ("", "Scatter"): ((9, "data indices updates", "output"),),
    ("", "ScatterElements"): ((11, "data indices updates", "output"),),
    ("", "ScatterND"): ((11, "data indices updates", "output"),),
    ("", "Selu"): ((1, "X", "Y"),),
    ("", "Shape"): ((1, "data", "shape"),),
    ("", "Shrink"): ((9, "input", "output"),),
    ("", "Sign"): ((9, "input", "output"),),
    ("", "Sinh"): ((9, "input", "output"),),
    ("", "Size"): ((1, "data", "size"),),
    ("", "Sigmoid"): ((1, "X", "Y"),),
    ("", "Sin"): ((7, "input", "output"),),
    ("", "Slice"): ((1, "data", "output"), (10, "data starts ends axes? steps?", "output")),
    ("", "Softmax"): ((1, "input", "output"),),
    ("", "Softplus"): ((1, "X", "Y"),),
    ("", "Softsign"): ((1, "input", "output"),),
    ("", "SpaceToDepth"): ((1, "input", "output"),),
    ("", "Split"): (
        (1, "input split?", "outputs+"),
        (2, "input", "outputs+"),
        (13, "input split?", "outputs+"),
    ),
    ("", "Sqrt"): ((1, "X", "Y"),),
    ("", "Squeeze"): ((1, "data", "squeezed"), (13, "data axes?", "squeezed")),
    ("", "Sub"): ((1, "A B", "C"),),
    ("", "Sum"): ((1, "data_0+", "sum"),),
    ("", "Tan"): ((7, "input", "output"),),
    ("", "Tanh"): ((1, "input", "output"),),
    ("", "ThresholdedRelu"): ((10, "X", "Y"),),
    ("", "Tile"): ((1, "input tiles axis", "output"), (6, "input repeats", "output")),
    ("", "TopK"): ((1, "X", "Values Indices"), (10, "X K", "Values Indices")),
    ("", "Transpose"): ((1, "data", "transposed"),),
    ("", "Trilu"): ((14, "input k?", "output"),),
    ("", "Unsqueeze"): ((1, "data", "expanded"), (13, "data axes", "expanded")),
    ("", "Upsample"): ((1, "X", "Y"), (9, "X scales", "Y")),
    ("", "Where"): ((9, "condition X Y", "output"),),
    ("", "Xor"): ((1, "A B", "C"),),
    ("com.microsoft", "DynamicQuantizeLSTM"): (
        (1, ("X W R B? sequence_lens? initial_h? initial_c? P? W_scale W_zero_point R_scale "
            "R_zero_point"), "Y? Y_h? Y_c?"),
    ),
    ("com.microsoft", "QGemm"): (
        (1, "A a_scale a_zero_point? B b_scale b_zero_point? C? y_scale? y_zero_point?", "Y"),
    ),
    ("com.microsoft", "QLinearAdd"): (
        (1, "A A_scale A_zero_point? B B_scale B_zero_point? C_scale C_zero_point?", "C"),
    ),
    ("com.microsoft", "QLinearAveragePool"): (
        (1, "X x_scale x_zero_point? y_scale y_zero_point?", "Y"),
    ),
    ("com.microsoft", "QLinearConcat"): ((1, "Y_scale Y_zero_point inputs+", "Y"),),
    ("com.microsoft", "QLinearGlobalAveragePool"): (
        (1, "X x_scale x_zero_point y_scale y_zero_point", "Y"),
    ),
    ("com.microsoft", "QLinearLeakyRelu"): (
        (1, "X X_scale X_zero_point? Y_scale Y_zero_point?", "Y"),
    ),
    ("com.microsoft", "QLinearMul"): (
        (1, "A A_scale A_zero_point? B B_scale B_zero_point? C_scale C_zero_point?", "C"),
    ),
    ("com.microsoft", "QLinearSigmoid"): (
        (1, "X X_scale X_zero_point? Y_scale Y_zero_point?", "Y"),
    ),
    ("com.microsoft", "QLinearSoftmax"): (
        (1, "X X_scale x_zero_point? y_scale y_zero_point", "Y"),
    ),
    ("systolic", "QAdd"): ((1, "A B", "C"),),
    ("systolic", "QAveragePool"): ((1, "X", "Y"),),
    ("systolic", "QConv"): ((1, "X W B?", "Y"),),
    ("systolic", "QConvInt"): ((1, "X W B?", "Y"),),
    ("systolic", "QLayerNorm"): ((1, "X", "Y"),),
    ("systolic", "QMatMul"): ((1, "A B bias?", "Y"),),
    ("systolic", "QMatMulInt"): ((1, "A B Bias?", "Y"),),
    ("systolic", "QMaxPool"): ((1, "X", "Y"),),
    ("systolic", "QMul"): ((1, "A B", "C"),),
    ("systolic", "QSoftmax"): ((1, "X ExpTable", "Y"),),
    ("systolic", "QTable"): ((1, "X Table", "Y"),),
}


EMPTY_VARIADIC_FROM: dict[tuple[str, str], int] = {("", "Loop"): 11}
"""(domain, op_type) -> the version from which its variadic input may be empty (the schema's
min_input: Loop-11 runs with no loop-carried values, only scan outputs)."""


def signature_of(domain: str, op_type: str, version: int) -> Signature | None:
    """Return the signature of the operator version bound at since_version `version` or
    below, or None for an operator without one."""
    found = None
    for since, inputs, outputs in SIGNATURES.get((domain, op_type), ()):
        if since <= version:
            found = (inputs, outputs)
    return found


def check_arity(
    domain: str,
    op_type: str,
    version: int,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    label: str,
) -> None:
    """Raise ModelError naming the node when it gives too few or too many inputs or outputs
    for its operator, or omits ("") an input that is required. (An omitted output is one
    nobody reads: the reference computes and drops it.)"""
    signature = signature_of(domain, op_type, version)
    if signature is None:
        return
    operator = f"{domain or 'ai.onnx'}.{op_type}:{version}"
    for role, formals, actual in (
        ("input", signature[0], inputs),
        ("output", signature[1], outputs),
    ):
        empty_ok = role == "input" and version >= EMPTY_VARIADIC_FROM.get(
            (domain, op_type), version + 1)
        problem = _arity_problem(formals.split(), actual, role, empty_ok)
        if problem:
            raise ModelError(
                f"node {label!r} ({operator}) {problem}; its {role}s are "
                f"({formals.replace(' ', ', ') or 'none'}): fix the model"
            )


def _arity_problem(formals: list[str], actual: tuple[str, ...], role: str,
                   empty_variadic: bool = False) -> str:
    variadic = bool(formals) and formals[-1].endswith("+")
    required = [i for i, f in enumerate(formals) if not f.endswith("?")
                and not (empty_variadic and variadic and i == len(formals) - 1)]
    least = required[-1] + 1 if required else 0
    most = None if variadic else len(formals)
    if len(actual) < least or (most is not None and len(actual) > most):
        if most is None:
            span = f"{least} or more"
        else:
            span = f"{least}" if least == most else f"{least} to {most}"
        return f"names {len(actual)} {role}(s) but the operator takes {span}"
    for index, name in enumerate(actual if role == "input" else ()):
        formal = formals[min(index, len(formals) - 1)]
        if not name and not formal.endswith("?"):
            return f"leaves required {role} {index} ({formal.rstrip('+')}) empty"
    return ""
