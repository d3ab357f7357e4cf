from __future__ import annotations

import gmpy2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.boost.helpers import short_keys
from vfl.boost import encrypted_histogram as eh
from vfl.boost import fixed_point as fp
from vfl.boost.histogram import plain_histogram
from vfl.boost.paillier import decrypt_all, encrypt_all


def decrypt_packed(packed: list[int], size: int) -> tuple[np.ndarray, np.ndarray]:
    keys = short_keys()
    slots = fp.slots_per_plaintext(keys.public.bits)
    plain = decrypt_all(keys.public.n, keys.p, keys.q, packed)
    sums = []
    for i, value in enumerate(plain):
        sums += fp.split_slots(fp.signed(value, keys.public.n), min(slots, size - i * slots))
    pairs = np.array([fp.unpack_pair(s) for s in sums])
    return pairs[:, 0], pairs[:, 1]


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(2, 40),
    bins=st.lists(st.integers(1, 6), min_size=1, max_size=3),
)
def test_encrypted_histograms_decrypt_to_the_plain_ones(
    seed: int, rows: int, bins: list[int]
) -> None:
    # Prepare: a parent node, one child summed directly and its sibling by subtraction
    keys = short_keys()
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, k + 1, size=rows) for k in bins], axis=1).astype(np.uint16)
    g, h = rng.normal(size=rows), rng.random(size=rows)
    scale = fp.GradientScale.for_gradients(g, h)
    g_int, h_int = scale.to_integers(g), scale.to_integers(h)
    ciphertexts = [gmpy2.mpz(c) for c in encrypt_all(keys.public.n, fp.pack_pairs(g_int, h_int))]
    n_square = gmpy2.mpz(keys.public.n_square)
    parent = np.arange(rows)
    child = np.sort(rng.choice(rows, size=rows // 2, replace=False))
    sibling = np.setdiff1d(parent, child)
    layout = np.array(bins)

    # Execute
    parent_sums = eh.encrypted_bin_sums(codes, bins, parent, ciphertexts, n_square)
    child_sums = eh.encrypted_bin_sums(codes, bins, child, ciphertexts, n_square)
    derived = eh.subtract(parent_sums, child_sums, n_square)
    slots = fp.slots_per_plaintext(keys.public.bits)
    packed = eh.pack(eh.cumulative(derived, bins, n_square), slots, keys.public)

    # Assert: the derived sibling decrypts to the sibling's own plain cumulative histogram
    got_g, got_h = decrypt_packed(packed, int(layout.sum()))
    expected = plain_histogram(
        codes, layout, sibling, scale.to_floats(g_int), scale.to_floats(h_int)
    )
    np.testing.assert_array_equal(scale.to_floats(got_g), expected.gradients)
    np.testing.assert_array_equal(scale.to_floats(got_h), expected.hessians)
    assert len(packed) == -(-int(layout.sum()) // slots)


def test_packed_ciphertexts_are_re_randomized() -> None:
    # Prepare: the same encrypted sums packed twice
    keys = short_keys()
    values = [gmpy2.mpz(c) for c in encrypt_all(keys.public.n, [1, 2, 3])]

    # Execute
    first = eh.pack(values, 4, keys.public)
    second = eh.pack(values, 4, keys.public)

    # Assert: same plaintext, different ciphertexts (fresh Enc(0) each time)
    assert first != second
    assert decrypt_packed(first, 3)[1].tolist() == decrypt_packed(second, 3)[1].tolist()
