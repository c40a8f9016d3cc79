from systolic.proto import onnx_ir_pb2 as _onnx_ir_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ArrayConfigProto(_message.Message):
    __slots__ = ("rows", "cols", "dataflow", "input_width", "weight_width", "acc_width", "spad_kib", "acc_kib", "bus_bytes", "mem_latency")
    class Dataflow(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        DATAFLOW_UNSPECIFIED: _ClassVar[ArrayConfigProto.Dataflow]
        WS: _ClassVar[ArrayConfigProto.Dataflow]
        OS: _ClassVar[ArrayConfigProto.Dataflow]
        BOTH: _ClassVar[ArrayConfigProto.Dataflow]
    DATAFLOW_UNSPECIFIED: ArrayConfigProto.Dataflow
    WS: ArrayConfigProto.Dataflow
    OS: ArrayConfigProto.Dataflow
    BOTH: ArrayConfigProto.Dataflow
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    DATAFLOW_FIELD_NUMBER: _ClassVar[int]
    INPUT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_WIDTH_FIELD_NUMBER: _ClassVar[int]
    ACC_WIDTH_FIELD_NUMBER: _ClassVar[int]
    SPAD_KIB_FIELD_NUMBER: _ClassVar[int]
    ACC_KIB_FIELD_NUMBER: _ClassVar[int]
    BUS_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEM_LATENCY_FIELD_NUMBER: _ClassVar[int]
    rows: int
    cols: int
    dataflow: ArrayConfigProto.Dataflow
    input_width: int
    weight_width: int
    acc_width: int
    spad_kib: int
    acc_kib: int
    bus_bytes: int
    mem_latency: int
    def __init__(self, rows: _Optional[int] = ..., cols: _Optional[int] = ..., dataflow: _Optional[_Union[ArrayConfigProto.Dataflow, str]] = ..., input_width: _Optional[int] = ..., weight_width: _Optional[int] = ..., acc_width: _Optional[int] = ..., spad_kib: _Optional[int] = ..., acc_kib: _Optional[int] = ..., bus_bytes: _Optional[int] = ..., mem_latency: _Optional[int] = ...) -> None: ...

class MemorySegmentProto(_message.Message):
    __slots__ = ("address", "data")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    address: int
    data: bytes
    def __init__(self, address: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class TensorPlacementProto(_message.Message):
    __slots__ = ("name", "role", "address", "shape", "dtype", "strides", "scale", "zero_point", "axis")
    class Role(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        ROLE_UNSPECIFIED: _ClassVar[TensorPlacementProto.Role]
        INPUT: _ClassVar[TensorPlacementProto.Role]
        OUTPUT: _ClassVar[TensorPlacementProto.Role]
        CONSTANT: _ClassVar[TensorPlacementProto.Role]
        ACTIVATION: _ClassVar[TensorPlacementProto.Role]
        INPUT_OUTPUT: _ClassVar[TensorPlacementProto.Role]
    ROLE_UNSPECIFIED: TensorPlacementProto.Role
    INPUT: TensorPlacementProto.Role
    OUTPUT: TensorPlacementProto.Role
    CONSTANT: TensorPlacementProto.Role
    ACTIVATION: TensorPlacementProto.Role
    INPUT_OUTPUT: TensorPlacementProto.Role
    class ElementType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNDEFINED: _ClassVar[TensorPlacementProto.ElementType]
        FLOAT: _ClassVar[TensorPlacementProto.ElementType]
        UINT8: _ClassVar[TensorPlacementProto.ElementType]
        INT8: _ClassVar[TensorPlacementProto.ElementType]
        UINT16: _ClassVar[TensorPlacementProto.ElementType]
        INT16: _ClassVar[TensorPlacementProto.ElementType]
        INT32: _ClassVar[TensorPlacementProto.ElementType]
        INT64: _ClassVar[TensorPlacementProto.ElementType]
        BOOL: _ClassVar[TensorPlacementProto.ElementType]
        FLOAT16: _ClassVar[TensorPlacementProto.ElementType]
        DOUBLE: _ClassVar[TensorPlacementProto.ElementType]
        UINT32: _ClassVar[TensorPlacementProto.ElementType]
        UINT64: _ClassVar[TensorPlacementProto.ElementType]
    UNDEFINED: TensorPlacementProto.ElementType
    FLOAT: TensorPlacementProto.ElementType
    UINT8: TensorPlacementProto.ElementType
    INT8: TensorPlacementProto.ElementType
    UINT16: TensorPlacementProto.ElementType
    INT16: TensorPlacementProto.ElementType
    INT32: TensorPlacementProto.ElementType
    INT64: TensorPlacementProto.ElementType
    BOOL: TensorPlacementProto.ElementType
    FLOAT16: TensorPlacementProto.ElementType
    DOUBLE: TensorPlacementProto.ElementType
    UINT32: TensorPlacementProto.ElementType
    UINT64: TensorPlacementProto.ElementType
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    STRIDES_FIELD_NUMBER: _ClassVar[int]
    SCALE_FIELD_NUMBER: _ClassVar[int]
    ZERO_POINT_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    name: str
    role: TensorPlacementProto.Role
    address: int
    shape: _containers.RepeatedScalarFieldContainer[int]
    dtype: TensorPlacementProto.ElementType
    strides: _containers.RepeatedScalarFieldContainer[int]
    scale: _containers.RepeatedScalarFieldContainer[float]
    zero_point: _containers.RepeatedScalarFieldContainer[int]
    axis: int
    def __init__(self, name: _Optional[str] = ..., role: _Optional[_Union[TensorPlacementProto.Role, str]] = ..., address: _Optional[int] = ..., shape: _Optional[_Iterable[int]] = ..., dtype: _Optional[_Union[TensorPlacementProto.ElementType, str]] = ..., strides: _Optional[_Iterable[int]] = ..., scale: _Optional[_Iterable[float]] = ..., zero_point: _Optional[_Iterable[int]] = ..., axis: _Optional[int] = ...) -> None: ...

class LayerProto(_message.Message):
    __slots__ = ("name", "op", "unit", "first_instruction", "instruction_count", "macs", "inputs", "outputs", "reason")
    class Unit(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        UNIT_UNSPECIFIED: _ClassVar[LayerProto.Unit]
        ARRAY: _ClassVar[LayerProto.Unit]
        VECTOR: _ClassVar[LayerProto.Unit]
        LAYOUT: _ClassVar[LayerProto.Unit]
        HOST: _ClassVar[LayerProto.Unit]
    UNIT_UNSPECIFIED: LayerProto.Unit
    ARRAY: LayerProto.Unit
    VECTOR: LayerProto.Unit
    LAYOUT: LayerProto.Unit
    HOST: LayerProto.Unit
    NAME_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    FIRST_INSTRUCTION_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_COUNT_FIELD_NUMBER: _ClassVar[int]
    MACS_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    op: str
    unit: LayerProto.Unit
    first_instruction: int
    instruction_count: int
    macs: int
    inputs: _containers.RepeatedScalarFieldContainer[str]
    outputs: _containers.RepeatedScalarFieldContainer[str]
    reason: str
    def __init__(self, name: _Optional[str] = ..., op: _Optional[str] = ..., unit: _Optional[_Union[LayerProto.Unit, str]] = ..., first_instruction: _Optional[int] = ..., instruction_count: _Optional[int] = ..., macs: _Optional[int] = ..., inputs: _Optional[_Iterable[str]] = ..., outputs: _Optional[_Iterable[str]] = ..., reason: _Optional[str] = ...) -> None: ...

class HostStepProto(_message.Message):
    __slots__ = ("layer", "node", "version", "constants")
    LAYER_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CONSTANTS_FIELD_NUMBER: _ClassVar[int]
    layer: int
    node: _onnx_ir_pb2.NodeProto
    version: int
    constants: _containers.RepeatedCompositeFieldContainer[_onnx_ir_pb2.TensorProto]
    def __init__(self, layer: _Optional[int] = ..., node: _Optional[_Union[_onnx_ir_pb2.NodeProto, _Mapping]] = ..., version: _Optional[int] = ..., constants: _Optional[_Iterable[_Union[_onnx_ir_pb2.TensorProto, _Mapping]]] = ...) -> None: ...

class ProgramProto(_message.Message):
    __slots__ = ("format_version", "config", "instruction_bytes", "code", "segments", "tensors", "layers", "host_steps")
    FORMAT_VERSION_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    INSTRUCTION_BYTES_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    TENSORS_FIELD_NUMBER: _ClassVar[int]
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    HOST_STEPS_FIELD_NUMBER: _ClassVar[int]
    format_version: int
    config: ArrayConfigProto
    instruction_bytes: int
    code: bytes
    segments: _containers.RepeatedCompositeFieldContainer[MemorySegmentProto]
    tensors: _containers.RepeatedCompositeFieldContainer[TensorPlacementProto]
    layers: _containers.RepeatedCompositeFieldContainer[LayerProto]
    host_steps: _containers.RepeatedCompositeFieldContainer[HostStepProto]
    def __init__(self, format_version: _Optional[int] = ..., config: _Optional[_Union[ArrayConfigProto, _Mapping]] = ..., instruction_bytes: _Optional[int] = ..., code: _Optional[bytes] = ..., segments: _Optional[_Iterable[_Union[MemorySegmentProto, _Mapping]]] = ..., tensors: _Optional[_Iterable[_Union[TensorPlacementProto, _Mapping]]] = ..., layers: _Optional[_Iterable[_Union[LayerProto, _Mapping]]] = ..., host_steps: _Optional[_Iterable[_Union[HostStepProto, _Mapping]]] = ...) -> None: ...
