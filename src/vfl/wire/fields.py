"""Field encoders: how each field type of a message becomes bytes and back.

Every multi-byte value is little-endian. A message body is its fields in declaration order with no
padding and no field tags: the schema (the message class) says what comes next, so a body carries
only payload plus the small per-field headers documented in ``docs/wire.md``.
"""

from __future__ import annotations

import math
import struct
import sys
from abc import ABC, abstractmethod
from typing import Any, TypeAlias

import torch

from vfl.errors import WireError
from vfl.wire.bitpack import pack_in_range, packed_size, unpack_ints

if sys.byteorder != "little":  # pragma: no cover - every supported host is little-endian
    raise ImportError("vfl's wire format assumes a little-endian host")

# Codes are part of the wire format: never renumber, only append.
DTYPE_CODES: dict[torch.dtype, int] = {
    torch.float32: 1,
    torch.float64: 2,
    torch.float16: 3,
    torch.bfloat16: 4,
    torch.int64: 5,
    torch.int32: 6,
    torch.int16: 7,
    torch.int8: 8,
    torch.uint8: 9,
    torch.bool: 10,
}
DTYPES_BY_CODE = {code: dtype for dtype, code in DTYPE_CODES.items()}
MAX_TENSOR_DIMS = 8
Chunks: TypeAlias = list[bytes | memoryview]
"""The pieces of a frame being encoded, joined into one ``bytes`` at the end (one copy)."""

Ids: TypeAlias = torch.Tensor
"""Sample row positions in a message: 1-D int64, non-negative, sent bit-packed (``IdsField``)."""

_I64 = struct.Struct("<q")
_IDS_HEAD = struct.Struct("<IB")
MAX_ID_BITS = 63
_F64 = struct.Struct("<d")
_U32 = struct.Struct("<I")
_TENSOR_HEAD = struct.Struct("<BB")
_TENSOR_HEADS = tuple(struct.Struct(f"<BB{ndim}I") for ndim in range(MAX_TENSOR_DIMS + 1))
"""A tensor's dtype code, ndim and sizes, one layout per ndim (packed in one call)."""
_SHAPES = tuple(struct.Struct(f"<{ndim}I") for ndim in range(MAX_TENSOR_DIMS + 1))


class Reader:
    """A cursor over received bytes that refuses to read past the end."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: memoryview, pos: int = 0) -> None:
        self._data = data
        self._pos = pos

    def take(self, size: int) -> memoryview:
        """Return the next ``size`` bytes and advance."""
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise WireError(
                f"message truncated: needed {size} more bytes at offset {self._pos}, only"
                f" {len(self._data) - self._pos} remain"
            )
        chunk = self._data[self._pos : end]
        self._pos = end
        return chunk

    def unpack(self, layout: struct.Struct) -> tuple[Any, ...]:
        """Read one fixed-size struct."""
        return layout.unpack(self.take(layout.size))

    @property
    def remaining(self) -> int:
        """Bytes not yet read."""
        return len(self._data) - self._pos


class FieldEncoding(ABC):
    """Encodes one field type."""

    @abstractmethod
    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""

    @abstractmethod
    def decode(self, reader: Reader) -> Any:
        """Read one value."""


class IntField(FieldEncoding):
    """A signed 64-bit integer (8 bytes)."""

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise WireError(f"expected an int field, got {type(value).__name__}")
        out.append(_I64.pack(value))

    def decode(self, reader: Reader) -> int:
        """Read one value."""
        return int(reader.unpack(_I64)[0])


class FloatField(FieldEncoding):
    """An IEEE-754 double (8 bytes)."""

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        out.append(_F64.pack(float(value)))

    def decode(self, reader: Reader) -> float:
        """Read one value."""
        return float(reader.unpack(_F64)[0])


class BytesField(FieldEncoding):
    """Raw bytes: a u32 length, then the bytes."""

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        out.append(_U32.pack(len(value)))
        out.append(bytes(value))

    def decode(self, reader: Reader) -> bytes:
        """Read one value."""
        (size,) = reader.unpack(_U32)
        return bytes(reader.take(size))


class StrField(FieldEncoding):
    """UTF-8 text: a u32 length, then the bytes."""

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        BytesField().encode(str(value).encode("utf-8"), out)

    def decode(self, reader: Reader) -> str:
        """Read one value."""
        raw = BytesField().decode(reader)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise WireError(f"text field is not valid UTF-8: {error}") from None


class TensorField(FieldEncoding):
    """A dense tensor: dtype code (u8), ndim (u8), ndim u32 sizes, then raw little-endian data.

    A 2-D tensor therefore costs ``2 + 2 * 4 = 10`` header bytes plus its payload.
    """

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        if not isinstance(value, torch.Tensor):
            raise WireError(f"expected a tensor field, got {type(value).__name__}")
        code = DTYPE_CODES.get(value.dtype)
        if code is None:
            raise WireError(f"dtype {value.dtype} cannot be sent; valid: {list(DTYPE_CODES)}")
        ndim = value.ndim
        if ndim > MAX_TENSOR_DIMS:
            raise WireError(f"tensor has {ndim} dims; at most {MAX_TENSOR_DIMS} can be sent")
        tensor = value.detach() if value.requires_grad else value
        if tensor.device.type != "cpu" or not tensor.is_contiguous():
            tensor = tensor.cpu().contiguous()
        if tensor.dtype == torch.bfloat16:  # numpy has no bfloat16: send its raw 16-bit words
            tensor = tensor.view(torch.int16)
        out.append(_TENSOR_HEADS[ndim].pack(code, ndim, *value.shape))
        out.append(tensor.numpy().reshape(-1).data.cast("B"))  # no copy until the join

    def decode(self, reader: Reader) -> torch.Tensor:
        """Read one value."""
        code, ndim = reader.unpack(_TENSOR_HEAD)
        dtype = DTYPES_BY_CODE.get(code)
        if dtype is None:
            raise WireError(f"unknown tensor dtype code {code}; valid: {sorted(DTYPES_BY_CODE)}")
        if ndim > MAX_TENSOR_DIMS:
            raise WireError(f"tensor claims {ndim} dims; at most {MAX_TENSOR_DIMS} are allowed")
        shape = reader.unpack(_SHAPES[ndim])
        count = math.prod(shape)
        nbytes = count * dtype.itemsize
        if nbytes > reader.remaining:
            raise WireError(
                f"tensor of shape {tuple(shape)} and dtype {dtype} needs {nbytes} bytes, only"
                f" {reader.remaining} remain"
            )
        payload = bytearray(reader.take(nbytes))  # a private, aligned, writable copy
        if count == 0:
            return torch.empty(shape, dtype=dtype)
        return torch.frombuffer(payload, dtype=dtype).reshape(shape)


class IdsField(FieldEncoding):
    """Row positions: a u32 count, a u8 width ``w``, then the ids bit-packed at ``w`` bits each.

    ``w`` is the bit length of the largest id in the message (1 for an empty or all-zero list),
    so a batch from a split of N rows costs ``5 + ceil(B·ceil(log2 N)/8)`` bytes instead of the
    ``10 + 8·B`` of an int64 tensor: 16 bits per id on MNIST's 60,000 rows, not 64.
    """

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        if not isinstance(value, torch.Tensor) or value.dtype != torch.int64 or value.ndim != 1:
            raise WireError(f"an id field must be a 1-D int64 tensor, got {_describe(value)}")
        ids = (value if value.device.type == "cpu" else value.cpu()).numpy()
        width = 1
        if len(ids):
            lowest = int(ids.min())
            if lowest < 0:
                raise WireError(f"ids must be non-negative, got {lowest}")
            width = max(1, int(ids.max()).bit_length())
        out.append(_IDS_HEAD.pack(len(ids), width))
        out.append(pack_in_range(ids, bits=width))

    def decode(self, reader: Reader) -> torch.Tensor:
        """Read one value."""
        count, width = reader.unpack(_IDS_HEAD)
        if not 1 <= width <= MAX_ID_BITS:
            raise WireError(f"id width {width} bits is invalid; valid: 1..{MAX_ID_BITS}")
        size = packed_size(count, width)
        if size > reader.remaining:
            raise WireError(
                f"{count} ids of {width} bits need {size} bytes, only {reader.remaining} remain"
            )
        return torch.from_numpy(unpack_ints(reader.take(size), bits=width, count=count))


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{value.dtype} of shape {tuple(value.shape)}"
    return type(value).__name__


class TensorListField(FieldEncoding):
    """A sequence of tensors: a u32 count, then each tensor."""

    _tensor = TensorField()

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        out.append(_U32.pack(len(value)))
        for tensor in value:
            self._tensor.encode(tensor, out)

    def decode(self, reader: Reader) -> tuple[torch.Tensor, ...]:
        """Read one value."""
        (count,) = reader.unpack(_U32)
        if count > reader.remaining // _TENSOR_HEAD.size:
            raise WireError(f"tensor list claims {count} tensors, more than the bytes left allow")
        return tuple(self._tensor.decode(reader) for _ in range(count))


class BytesListField(FieldEncoding):
    """A sequence of byte strings: a u32 count, then each as ``bytes``."""

    _bytes = BytesField()

    def encode(self, value: Any, out: Chunks) -> None:
        """Append the encoding of ``value`` to ``out``."""
        out.append(_U32.pack(len(value)))
        for item in value:
            self._bytes.encode(item, out)

    def decode(self, reader: Reader) -> tuple[bytes, ...]:
        """Read one value."""
        (count,) = reader.unpack(_U32)
        if count > reader.remaining // _U32.size:
            raise WireError(f"byte-string list claims {count} items, more than the bytes allow")
        return tuple(self._bytes.decode(reader) for _ in range(count))


# Annotation strings (messages use ``from __future__ import annotations``) to field encodings.
ENCODINGS_BY_ANNOTATION: dict[str, FieldEncoding] = {
    "int": IntField(),
    "float": FloatField(),
    "bytes": BytesField(),
    "str": StrField(),
    "torch.Tensor": TensorField(),
    "Tensor": TensorField(),
    "Ids": IdsField(),
    "tuple[torch.Tensor, ...]": TensorListField(),
    "tuple[bytes, ...]": BytesListField(),
}
