"""Paillier encryption from python-paillier (``phe``, with gmpy2): keys, ciphertext bytes, checks.

The label holder generates the key pair and keeps the private key; the other holders get only the
modulus ``n``. ``phe`` draws its primes and every encryption's obfuscator ``r`` from
``random.SystemRandom`` (the operating system's CSPRNG), so nothing here is seeded. We use its raw
integer interface: ``Enc(m) = (1 + n m) r^n mod n^2``; adding plaintexts is multiplying
ciphertexts mod ``n^2``.

Keys shorter than 2048 bits are refused (NIST SP 800-57 Part 1 rev. 5, Table 2: 2048-bit factoring
moduli give 112 bits of security) unless the caller passes ``insecure_test_key=True``, which only
tests do, to keep them fast.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import gmpy2
from phe import paillier

from vfl.errors import ConfigError, WireError

DEFAULT_KEY_BITS = 2048
MIN_SECURE_KEY_BITS = 2048
MIN_TEST_KEY_BITS = 512
MAX_KEY_BITS = 8192


def check_key_bits(bits: int, *, insecure_test_key: bool = False) -> None:
    """Refuse a modulus size that is not a multiple of 8 in range, or too short for use."""
    if not isinstance(bits, int) or isinstance(bits, bool) or bits % 8:
        raise ConfigError(
            f"key_bits must be a whole number of bytes (a multiple of 8), got {bits!r}"
        )
    floor = MIN_TEST_KEY_BITS if insecure_test_key else MIN_SECURE_KEY_BITS
    if not floor <= bits <= MAX_KEY_BITS:
        hint = (
            ""
            if insecure_test_key
            else " (shorter keys only with insecure_test_key=True, in tests)"
        )
        raise ConfigError(f"key_bits must lie in [{floor}, {MAX_KEY_BITS}], got {bits}{hint}")


@dataclass(frozen=True)
class PublicKey:
    """The modulus ``n`` every holder encrypts and adds under.

    Attributes:
        n: The Paillier modulus.
    """

    n: int
    n_square: int = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.n < 3 or self.n % 2 == 0:
            raise WireError(
                f"a Paillier modulus is an odd number > 2, got one of {self.n.bit_length()} bits"
            )
        object.__setattr__(self, "n_square", self.n * self.n)

    @property
    def bits(self) -> int:
        """Bits of ``n``."""
        return self.n.bit_length()

    @property
    def ciphertext_size(self) -> int:
        """Bytes of one ciphertext on the wire (``n^2``'s byte length)."""
        return (self.n_square.bit_length() + 7) // 8

    def to_bytes(self) -> bytes:
        """``n``, little-endian, in ``ceil(bits / 8)`` bytes."""
        return self.n.to_bytes((self.bits + 7) // 8, "little")

    @classmethod
    def from_bytes(cls, data: bytes, *, insecure_test_key: bool = False) -> PublicKey:
        """The key announced in ``data``; refuses a modulus shorter than the policy allows."""
        n = int.from_bytes(data, "little")
        floor = MIN_TEST_KEY_BITS if insecure_test_key else MIN_SECURE_KEY_BITS
        if n.bit_length() < floor or n.bit_length() > MAX_KEY_BITS:
            raise WireError(
                f"the announced Paillier modulus has {n.bit_length()} bits; this holder accepts"
                f" {floor} to {MAX_KEY_BITS}"
            )
        return cls(n)

    @cached_property
    def encryptor(self) -> paillier.PaillierPublicKey:
        """``phe``'s public key object."""
        return paillier.PaillierPublicKey(self.n)

    def encrypt_zero(self) -> int:
        """A fresh ``Enc(0) = r^n mod n^2``: multiplying by it re-randomizes a ciphertext."""
        value: int = self.encryptor.raw_encrypt(0)
        return value

    def encode(self, ciphertexts: Iterable[int]) -> bytes:
        """Ciphertexts as fixed-width little-endian bytes, concatenated."""
        size = self.ciphertext_size
        return b"".join(int(c).to_bytes(size, "little") for c in ciphertexts)

    def decode(self, data: bytes, *, count: int | None = None) -> list[gmpy2.mpz]:
        """The ciphertexts in ``data``, each checked to be a unit modulo ``n^2``.

        Raises:
            WireError: if the bytes are not a whole number of ciphertexts of this key, the count
                differs from ``count``, or a value is not a valid ciphertext of this key.
        """
        size = self.ciphertext_size
        if len(data) % size:
            raise WireError(
                f"{len(data)} bytes of ciphertexts are not a whole number of {size}-byte"
                f" ciphertexts of this {self.bits}-bit key (a different key size?)"
            )
        if count is not None and len(data) // size != count:
            raise WireError(f"expected {count} ciphertexts, got {len(data) // size}")
        n, n_square = gmpy2.mpz(self.n), gmpy2.mpz(self.n_square)
        values = []
        for index in range(len(data) // size):
            value = gmpy2.mpz(int.from_bytes(data[index * size : (index + 1) * size], "little"))
            if not 0 < value < n_square or gmpy2.gcd(value, n) != 1:
                raise WireError(
                    f"ciphertext {index} is not a valid ciphertext of this {self.bits}-bit key"
                    " (not a unit modulo n^2): a different key, or corrupted bytes"
                )
            values.append(value)
        return values


@dataclass(frozen=True)
class KeyPair:
    """The label holder's Paillier key pair (the private primes never leave it).

    Attributes:
        public: The public modulus.
        p: The smaller prime factor of ``n``.
        q: The larger prime factor of ``n``.
    """

    public: PublicKey
    p: int = field(repr=False)
    q: int = field(repr=False)

    @classmethod
    def generate(cls, bits: int = DEFAULT_KEY_BITS, *, insecure_test_key: bool = False) -> KeyPair:
        """A fresh key pair with a ``bits``-bit modulus, primes from the OS CSPRNG (``phe``)."""
        check_key_bits(bits, insecure_test_key=insecure_test_key)
        public, private = paillier.generate_paillier_keypair(n_length=bits)
        return cls(PublicKey(public.n), int(private.p), int(private.q))

    @cached_property
    def decryptor(self) -> paillier.PaillierPrivateKey:
        """``phe``'s private key object."""
        return paillier.PaillierPrivateKey(self.public.encryptor, self.p, self.q)


def encrypt_all(n: int, plaintexts: Sequence[int]) -> list[int]:
    """``Enc(m mod n)`` of every plaintext (signed integers wrap modulo ``n``), fresh ``r`` each."""
    key = paillier.PaillierPublicKey(n)
    return [key.raw_encrypt(m % n) for m in plaintexts]


def encrypt_all_private(n: int, p: int, q: int, plaintexts: Sequence[int]) -> list[int]:
    """``encrypt_all`` for the key's owner: the same ciphertexts, about twice as fast.

    ``phe`` draws ``r`` (``random.SystemRandom``) and computes ``(1 + n m) mod n^2``; the owner,
    knowing ``p`` and ``q``, computes the obfuscator ``r^n mod n^2`` modulo ``p^2`` and ``q^2``
    (exponents reduced by ``p (p - 1)`` and ``q (q - 1)``, the orders of those groups) and joins
    them by the Chinese remainder theorem: half-size moduli instead of one full-size one.
    """
    key = paillier.PaillierPublicKey(n)
    p_square, q_square = gmpy2.mpz(p) ** 2, gmpy2.mpz(q) ** 2
    exponent_p, exponent_q = gmpy2.mpz(n) % (p * (p - 1)), gmpy2.mpz(n) % (q * (q - 1))
    q_square_inverse = gmpy2.invert(q_square, p_square)
    n_square = gmpy2.mpz(key.nsquare)
    values = []
    for m in plaintexts:
        r = gmpy2.mpz(key.get_random_lt_n())
        at_p = gmpy2.powmod(r, exponent_p, p_square)
        at_q = gmpy2.powmod(r, exponent_q, q_square)
        obfuscator = at_q + q_square * ((at_p - at_q) * q_square_inverse % p_square)
        values.append(int(key.raw_encrypt(m % n, r_value=1) * obfuscator % n_square))
    return values


def decrypt_all(n: int, p: int, q: int, ciphertexts: Sequence[int]) -> list[int]:
    """The plaintexts in ``[0, n)`` of ``ciphertexts``."""
    key = paillier.PaillierPrivateKey(paillier.PaillierPublicKey(n), p, q)
    return [key.raw_decrypt(int(c)) for c in ciphertexts]
