"""Read and write IDX files, the array format of MNIST and Fashion-MNIST.

An IDX file is a 4-byte magic ``0 0 dtype ndim``, then ``ndim`` big-endian ``uint32`` sizes, then
the data in row-major order, big-endian. Files may be gzipped; ``read_idx`` detects that from the
gzip magic bytes, not from the file name.
"""

from __future__ import annotations

import gzip as gzip_module
import math
import zlib
from pathlib import Path

import numpy as np
import numpy.typing as npt

from vfl.errors import DataError

_GZIP_MAGIC = b"\x1f\x8b"

# IDX type code -> big-endian numpy dtype.
_CODE_TO_DTYPE: dict[int, np.dtype[np.generic]] = {
    0x08: np.dtype(">u1"),
    0x09: np.dtype(">i1"),
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}
_KIND_TO_CODE: dict[str, int] = {dtype.str[1:]: code for code, dtype in _CODE_TO_DTYPE.items()}
_VALID_DTYPES = "uint8, int8, int16, int32, float32, float64"


def read_idx(path: Path | str) -> npt.NDArray[np.generic]:
    """Read an IDX file, raw or gzipped.

    Args:
        path: The file to read.

    Returns:
        The array, in native byte order, with the shape and dtype the header gives.

    Raises:
        DataError: If the file is not valid gzip, has a bad magic number or dtype code, or holds
            fewer or more data bytes than its header promises.
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise DataError(f"cannot read IDX file {path}: {error}") from error
    if raw[:2] == _GZIP_MAGIC:
        try:
            raw = gzip_module.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise DataError(
                f"IDX file {path} starts like gzip but does not decompress: {error}"
            ) from error
    dtype, shape = _parse_header(raw, path)
    offset = 4 + 4 * len(shape)
    expected = math.prod(shape) * dtype.itemsize
    found = len(raw) - offset
    if found < expected:
        raise DataError(
            f"IDX file {path} is truncated: its header promises shape {shape} of {dtype.name}"
            f" ({expected} data bytes) but only {found} bytes follow the header"
        )
    if found > expected:
        raise DataError(
            f"IDX file {path} has {found - expected} bytes after the data of shape {shape}"
            f" ({expected} bytes); the sizes in its header do not match its contents"
        )
    data = np.frombuffer(raw, dtype=dtype, count=math.prod(shape), offset=offset)
    return data.reshape(shape).astype(dtype.newbyteorder("="))


def write_idx(path: Path | str, array: npt.ArrayLike, *, gzip: bool = False) -> None:
    """Write an array as an IDX file.

    Args:
        path: The file to write; it is replaced if it exists.
        array: An array of at least one dimension with dtype uint8, int8, int16, int32, float32 or
            float64.
        gzip: Whether to gzip the file (the name is not changed).

    Raises:
        DataError: If the dtype or the number of dimensions cannot be stored in IDX.
    """
    values = np.asarray(array)
    code = _KIND_TO_CODE.get(values.dtype.str[1:])
    if code is None:
        raise DataError(f"IDX cannot store dtype {values.dtype}; valid dtypes: {_VALID_DTYPES}")
    if not 1 <= values.ndim <= 255:
        raise DataError(f"IDX stores arrays of 1 to 255 dimensions, got {values.ndim}")
    if any(size >= 2**32 for size in values.shape):
        raise DataError(f"IDX sizes must fit in uint32, got shape {values.shape}")
    header = bytes([0, 0, code, values.ndim]) + np.asarray(values.shape, dtype=">u4").tobytes()
    payload = header + values.astype(_CODE_TO_DTYPE[code], copy=False).tobytes(order="C")
    if gzip:
        payload = gzip_module.compress(payload, mtime=0)
    Path(path).write_bytes(payload)


def _parse_header(raw: bytes, path: Path) -> tuple[np.dtype[np.generic], tuple[int, ...]]:
    """Return the big-endian dtype and the shape that an IDX header declares."""
    if len(raw) < 4:
        raise DataError(f"IDX file {path} is truncated: {len(raw)} bytes, shorter than the magic")
    zero_a, zero_b, code, ndim = raw[:4]
    if zero_a or zero_b:
        raise DataError(
            f"IDX file {path} has a bad magic number {raw[:4].hex()}: it must start with two zero"
            " bytes (0x0000), then a type code and the number of dimensions"
        )
    dtype = _CODE_TO_DTYPE.get(code)
    if dtype is None:
        valid = ", ".join(f"0x{c:02X}" for c in _CODE_TO_DTYPE)
        raise DataError(f"IDX file {path} has unknown type code 0x{code:02X}; valid codes: {valid}")
    if ndim == 0:
        raise DataError(f"IDX file {path} declares 0 dimensions; it must have at least 1")
    if len(raw) < 4 + 4 * ndim:
        raise DataError(
            f"IDX file {path} is truncated: its header declares {ndim} dimensions but the file ends"
            f" after {len(raw)} bytes"
        )
    sizes = np.frombuffer(raw, dtype=">u4", count=ndim, offset=4)
    return dtype, tuple(int(size) for size in sizes)
