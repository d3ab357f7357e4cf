from __future__ import annotations

import random

import gmpy2
import pytest
from phe import paillier

from tests.boost.helpers import TEST_KEY_BITS, short_keys
from vfl.boost.fixed_point import signed
from vfl.boost.paillier import (
    KeyPair,
    PublicKey,
    check_key_bits,
    decrypt_all,
    encrypt_all,
    encrypt_all_private,
)
from vfl.boost.pool import CipherPool
from vfl.errors import ConfigError, WireError


@pytest.mark.parametrize("bits", [512, 1024, 2040])
def test_keys_below_2048_bits_are_refused_without_the_test_flag(bits: int) -> None:
    with pytest.raises(ConfigError, match=f"got {bits}.*insecure_test_key"):
        KeyPair.generate(bits)


@pytest.mark.parametrize("bits", [2047, 256, 16384, True])
def test_key_sizes_out_of_range_are_refused_even_for_tests(bits: int) -> None:
    with pytest.raises(ConfigError, match="key_bits"):
        check_key_bits(bits, insecure_test_key=True)


def test_a_short_modulus_announced_to_a_holder_is_refused() -> None:
    # Prepare
    modulus = short_keys().public.to_bytes()

    # Execute / Assert
    with pytest.raises(WireError, match=f"{TEST_KEY_BITS} bits; this holder accepts 2048"):
        PublicKey.from_bytes(modulus)
    assert PublicKey.from_bytes(modulus, insecure_test_key=True) == short_keys().public


def test_key_and_obfuscators_come_from_the_operating_system(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Prepare: count every draw from random.SystemRandom (os.urandom underneath)
    draws = []

    class Counting(random.SystemRandom):
        def getrandbits(self, k: int) -> int:
            draws.append(k)
            return super().getrandbits(k)

    monkeypatch.setattr(random, "SystemRandom", Counting)

    # Execute
    keys = KeyPair.generate(TEST_KEY_BITS, insecure_test_key=True)
    key_draws = len(draws)
    first, second = encrypt_all(keys.public.n, [7, 7])

    # Assert: primes and each encryption's r drew from the OS; equal plaintexts look different
    assert key_draws >= 2
    assert len(draws) >= key_draws + 2
    assert first != second


def test_ciphertexts_add_through_their_bytes() -> None:
    # Prepare
    keys = short_keys()
    key = keys.public
    values = [5, -3, 2**100, -(2**90)]

    # Execute
    decoded = key.decode(key.encode(encrypt_all(key.n, values)), count=len(values))
    total = gmpy2.mpz(1)
    for c in decoded:
        total = total * c % key.n_square
    (plain,) = decrypt_all(key.n, keys.p, keys.q, [int(total)])

    # Assert
    assert signed(plain, key.n) == sum(values)
    assert len(key.encode(decoded)) == len(values) * key.ciphertext_size == len(values) * 128


def test_bytes_of_another_key_size_are_refused() -> None:
    # Prepare
    key = short_keys().public

    # Execute / Assert
    with pytest.raises(WireError, match="not a whole number of 128-byte ciphertexts"):
        key.decode(b"\x01" * 200)
    with pytest.raises(WireError, match="expected 3 ciphertexts, got 2"):
        key.decode(b"\x01" + b"\x00" * 255, count=3)


@pytest.mark.parametrize("name", ["zero", "n", "n_square"])
def test_values_that_are_no_ciphertext_of_this_key_are_refused(name: str) -> None:
    # Prepare: 0 and multiples of n are not units modulo n^2; n^2 is out of range
    key = short_keys().public
    number = {"zero": 0, "n": key.n, "n_square": key.n_square}[name]

    # Execute / Assert
    with pytest.raises(WireError, match="ciphertext 0 is not a valid ciphertext"):
        key.decode(number.to_bytes(key.ciphertext_size, "little"))


def test_the_pool_encrypts_and_decrypts_like_one_process() -> None:
    # Prepare: enough values to go to the worker processes
    keys = short_keys()
    values = list(range(-40, 60))

    # Execute
    with CipherPool(keys, workers=2) as pool:
        ciphertexts = pool.encrypt(values)
        plain = pool.decrypt(ciphertexts)

    # Assert
    assert [signed(p, keys.public.n) for p in plain] == values
    assert len(set(ciphertexts)) == len(values)


def test_the_pool_refuses_no_workers() -> None:
    with pytest.raises(ConfigError, match="workers must be an integer >= 1, got 0"):
        CipherPool(short_keys(), workers=0)


def test_the_owner_s_encryption_is_phe_s_with_the_same_r(monkeypatch: pytest.MonkeyPatch) -> None:
    # Prepare: fix r for both, so their ciphertexts must be equal
    keys = short_keys()
    public = paillier.PaillierPublicKey(keys.public.n)
    r = 123456789123456789
    monkeypatch.setattr(paillier.PaillierPublicKey, "get_random_lt_n", lambda self: r)
    values = [0, 1, 42, -5, 2**200]

    # Execute
    ours = encrypt_all_private(keys.public.n, keys.p, keys.q, values)

    # Assert
    assert ours == [public.raw_encrypt(v % keys.public.n, r_value=r) for v in values]


def test_the_owner_s_encryption_decrypts_and_is_randomized() -> None:
    # Prepare
    keys = short_keys()
    values = [7, 7, -3, 2**300]

    # Execute
    ours = encrypt_all_private(keys.public.n, keys.p, keys.q, values)

    # Assert: phe decrypts them; equal plaintexts give different ciphertexts
    plain = decrypt_all(keys.public.n, keys.p, keys.q, ours)
    assert [signed(v, keys.public.n) for v in plain] == values
    assert ours[0] != ours[1]


def test_phe_is_the_encryption_underneath() -> None:
    # Prepare
    keys = short_keys()

    # Execute
    (ciphertext,) = encrypt_all(keys.public.n, [42])

    # Assert: phe's own decryption reads it
    private = paillier.PaillierPrivateKey(paillier.PaillierPublicKey(keys.public.n), keys.p, keys.q)
    assert private.raw_decrypt(ciphertext) == 42
