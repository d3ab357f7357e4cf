"""Bit packing: one contract for the numpy paths and the compiled loops (each test runs both)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfl.errors import WireError
from vfl.wire import bitpack_kernels
from vfl.wire.bitpack import pack_bits, pack_in_range, packed_size, unpack_bits, unpack_ints

PATHS = [
    pytest.param(
        "compiled",
        marks=pytest.mark.skipif(not bitpack_kernels.available(), reason="numba is not installed"),
    ),
    "numpy",
]
EACH_PATH = pytest.mark.parametrize("path", PATHS)


@contextmanager
def packing_by(path: str) -> Iterator[None]:
    """Pack and unpack through ``path``: the compiled loops wherever they can (every message
    size, loaded or not), or numpy only."""
    serves = _loaded_for_every_size if path == "compiled" else _never
    with mock.patch.object(bitpack_kernels, "serves", serves):
        yield


def _never(bits: int, count: int) -> bool:
    return False


def _loaded_for_every_size(bits: int, count: int) -> bool:
    return bits % 8 != 0 and bits <= bitpack_kernels.STREAM_MAX_BITS


@st.composite
def codes(
    draw: st.DrawFn, max_bits: int = 64, dtype: type[np.integer] = np.uint64
) -> tuple[np.ndarray, int]:
    bits = draw(st.integers(1, max_bits))
    count = draw(st.integers(0, 200))
    top = 2**bits - 1
    values = draw(st.lists(st.integers(0, top), min_size=count, max_size=count))
    return np.array(values, dtype=dtype), bits


@EACH_PATH
@settings(deadline=None)  # the first compiled call loads the loops
@given(case=codes())
def test_pack_then_unpack_is_the_identity_in_exactly_the_stated_bytes(
    path: str, case: tuple[np.ndarray, int]
) -> None:
    with packing_by(path):
        # Prepare
        values, bits = case

        # Execute
        packed = pack_bits(values, bits=bits)

        # Assert
        assert len(packed) == packed_size(len(values), bits) == -(-len(values) * bits // 8)
        assert unpack_bits(packed, bits=bits, count=len(values)).tolist() == values.tolist()


def stream_reference(values: np.ndarray, bits: int) -> bytes:
    """The module's layout stated directly: code ``i`` is bits ``[i * bits, (i + 1) * bits)``."""
    stream = sum(int(code) << (index * bits) for index, code in enumerate(values.tolist()))
    return stream.to_bytes(-(-len(values) * bits // 8), "little")


@EACH_PATH
@settings(deadline=None)  # the first compiled call loads the loops
@given(case=codes())
def test_packing_lays_codes_out_exactly_as_the_stated_bit_stream(
    path: str, case: tuple[np.ndarray, int]
) -> None:
    with packing_by(path):
        # Prepare
        values, bits = case

        # Execute
        packed = pack_bits(values, bits=bits)

        # Assert
        assert packed == stream_reference(values, bits)


@EACH_PATH
@settings(deadline=None)  # the first compiled call loads the loops
@given(case=codes(), position=st.integers(0, 7))
def test_a_set_padding_bit_is_refused_for_every_width(
    path: str, case: tuple[np.ndarray, int], position: int
) -> None:
    with packing_by(path):
        # Prepare
        values, bits = case
        used = len(values) * bits
        if used % 8 == 0 or position < used % 8:
            return  # no padding bit at this position: nothing to corrupt
        dirty = bytearray(pack_bits(values, bits=bits))
        dirty[-1] |= 1 << position

        # Execute / Assert
        with pytest.raises(WireError, match="padding"):
            unpack_bits(bytes(dirty), bits=bits, count=len(values))


@EACH_PATH
def test_two_bit_codes_fill_four_per_byte(path: str) -> None:
    with packing_by(path):
        assert pack_bits(np.array([1, 2, 3, 0, 3]), bits=2) == bytes([0b00111001, 0b00000011])


def test_codes_that_do_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="does not fit in 3 bits"):
        pack_bits(np.array([8]), bits=3)
    with pytest.raises(ValueError, match="non-negative"):
        pack_bits(np.array([-1]), bits=3)
    with pytest.raises(ValueError, match=r"bits must be in 1\.\.64"):
        pack_bits(np.array([1]), bits=0)


@EACH_PATH
def test_wrong_lengths_and_dirty_padding_are_wire_errors(path: str) -> None:
    with packing_by(path):
        with pytest.raises(WireError, match="need 1 bytes, got 2"):
            unpack_bits(b"\x00\x00", bits=2, count=3)
        with pytest.raises(WireError, match="padding"):
            unpack_bits(bytes([0b11000000]), bits=2, count=3)


def test_the_compiled_loops_serve_the_widths_that_are_not_whole_bytes_up_to_32() -> None:
    # Execute: a message large enough to load them
    count = bitpack_kernels.LOAD_FROM_CODES
    served = [bits for bits in range(1, 65) if bitpack_kernels.serves(bits, count)]

    # Assert
    expected = [b for b in range(1, 33) if b % 8] if bitpack_kernels.available() else []
    assert served == expected


SMALL_AND_LARGE = (
    "import sys\n"
    "import numpy as np\n"
    "from vfl.wire.bitpack import pack_in_range, unpack_ints\n"
    "count = int(sys.argv[1])\n"
    "codes = np.arange(count, dtype=np.int64) % 100\n"
    "packed = pack_in_range(codes, bits=7)\n"
    "assert unpack_ints(packed, bits=7, count=count).tolist() == codes.tolist()\n"
    "print('numba' in sys.modules)\n"
)


@pytest.mark.skipif(not bitpack_kernels.available(), reason="numba is not installed")
@pytest.mark.parametrize(
    ("count", "loads_numba"),
    [
        (128, False),
        (bitpack_kernels.LOAD_FROM_CODES - 1, False),
        (bitpack_kernels.LOAD_FROM_CODES, True),  # the control: the same check sees a load
    ],
)
def test_small_messages_never_load_numba_into_a_process(count: int, loads_numba: bool) -> None:
    # Execute: a fresh interpreter, so that nothing else has imported numba
    result = subprocess.run(
        [sys.executable, "-c", SMALL_AND_LARGE, str(count)],
        capture_output=True,
        text=True,
        check=True,
    )

    # Assert
    assert result.stdout.strip() == str(loads_numba)


@pytest.mark.skipif(not bitpack_kernels.available(), reason="numba is not installed")
def test_once_loaded_the_loops_serve_small_messages_too() -> None:
    # Prepare
    bitpack_kernels.compiled()

    # Execute
    served = bitpack_kernels.serves(7, 1)

    # Assert
    assert bitpack_kernels.loaded() and served


@EACH_PATH
@settings(deadline=None)  # the first compiled call loads the loops
@given(case=codes(max_bits=63, dtype=np.int64))  # as IdsField sends row ids
def test_the_message_path_packs_and_unpacks_int64_codes_in_the_stated_layout(
    path: str, case: tuple[np.ndarray, int]
) -> None:
    with packing_by(path):
        # Prepare
        values, bits = case

        # Execute
        packed = pack_in_range(values, bits=bits)
        unpacked = unpack_ints(packed, bits=bits, count=len(values))

        # Assert: the bytes pack_bits writes, read back as the same int64 values
        assert packed == stream_reference(values, bits) == pack_bits(values, bits=bits)
        assert unpacked.dtype == np.int64
        assert unpacked.tolist() == values.tolist()


@EACH_PATH
@pytest.mark.parametrize("bits", [3, 8, 16, 17])
def test_the_int64_reader_refuses_wrong_lengths_dirty_padding_and_64_bit_codes(
    path: str, bits: int
) -> None:
    with packing_by(path):
        # Prepare: three codes; a set bit after the last code where there is padding
        packed = pack_in_range(np.array([1, 2, 3], dtype=np.int64), bits=bits)
        dirty = bytearray(packed)
        dirty[-1] |= 0x80

        # Execute / Assert
        with pytest.raises(WireError, match="need"):
            unpack_ints(packed + b"\x00", bits=bits, count=3)
        if (3 * bits) % 8:
            with pytest.raises(WireError, match="padding"):
                unpack_ints(bytes(dirty), bits=bits, count=3)
        else:  # negative control: whole bytes have no padding, the top bit is a code's
            assert unpack_ints(bytes(dirty), bits=bits, count=3)[-1] > 3
        with pytest.raises(ValueError, match=r"1\.\.63"):
            unpack_ints(packed, bits=64, count=3)
