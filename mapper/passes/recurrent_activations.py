"""The activation functions of a recurrent node (RNN, GRU, LSTM) as (name, alpha, beta),
read as the reference reads them (systolic/reference/ops/op_recurrent.py): per direction the
operator's functions (RNN f; GRU f, g; LSTM f, g, h), defaults Tanh; Sigmoid, Tanh; Sigmoid,
Tanh, Tanh; each function that has an alpha (a beta) takes the next value of
`activation_alpha` (`activation_beta`), missing ones defaulting as the activation operators
do."""

from systolic.ir import Node
from systolic.mapper.passes.graph_tools import attr_str

__all__ = ["activation_specs"]

DEFAULTS = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh"),
            "DynamicQuantizeLSTM": ("Sigmoid", "Tanh", "Tanh")}
DEFAULT_ALPHA = {"LeakyRelu": 0.01, "ThresholdedRelu": 1.0, "HardSigmoid": 0.2, "Elu": 1.0,
                 "ScaledTanh": 1.0, "Affine": 1.0}
DEFAULT_BETA = {"HardSigmoid": 0.5, "ScaledTanh": 1.0, "Affine": 0.0}
PLAIN = frozenset({"Relu", "Tanh", "Sigmoid", "Softsign", "Softplus"})


def activation_specs(node: Node) -> list[tuple[str, float, float]]:
    """Return every direction's functions in order; ValueError names an unusable one."""
    directions = 2 if attr_str(node, "direction", "forward") == "bidirectional" else 1
    defaults = DEFAULTS[node.op_type]
    names = [_text(v) for v in _as_list(node.attrs.get("activations"))]
    names = names or list(defaults) * directions
    if len(names) != len(defaults) * directions:
        raise ValueError(f"activations lists {len(names)} functions, not "
                         f"{len(defaults) * directions}")
    alphas = [float(a) for a in _as_list(node.attrs.get("activation_alpha"))][::-1]  # type: ignore[arg-type]
    betas = [float(b) for b in _as_list(node.attrs.get("activation_beta"))][::-1]  # type: ignore[arg-type]
    specs = []
    for name in names:
        if name not in PLAIN and name not in DEFAULT_ALPHA:
            raise ValueError(f"activation {name!r} is not a recurrent operator's function")
        alpha = alphas.pop() if name in DEFAULT_ALPHA and alphas else DEFAULT_ALPHA.get(name, 0.0)
        beta = betas.pop() if name in DEFAULT_BETA and betas else DEFAULT_BETA.get(name, 0.0)
        specs.append((name, alpha, beta))
    return specs


def _as_list(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, tuple) else [value]


def _text(value: object) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
