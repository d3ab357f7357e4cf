"""Addresses as written in configs and on the command line: ``host:port``.

Kept apart from the link so that reading a config loads neither gRPC's messages nor torch.
"""

from __future__ import annotations

from vfl.errors import ConfigError

MAX_PORT = 65535


def split_address(address: str, *, listen: bool = False) -> tuple[str, int]:
    """The host and port of ``host:port`` (an IPv6 host in brackets: ``[::1]:50051``).

    Args:
        address: The address as written in a config or on the command line.
        listen: An address to listen on, where port 0 means a free port.

    Raises:
        ConfigError: saying what is wrong and what would be valid (the caller names the field).

    Example:
        >>> split_address("[::1]:50051")
        ('[::1]', 50051)
        >>> split_address("vfl.example")
        Traceback (most recent call last):
        ...
        vfl.errors.ConfigError: 'vfl.example' has no port; give host:port, e.g. vfl.example:50051
    """
    host, colon, port = address.strip().rpartition(":")
    lowest = 0 if listen else 1
    example = f"{address.strip() or 'localhost'}:50051"
    if not colon:
        raise ConfigError(f"{address!r} has no port; give host:port, e.g. {example}")
    if not host:
        raise ConfigError(f"{address!r} has no host; give host:port, e.g. localhost{colon}{port}")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise ConfigError(f"{address!r}: write an IPv6 host in brackets, e.g. [::1]:{port}")
    if not port.isdigit():
        raise ConfigError(f"{address!r}: the port {port!r} is not a number")
    if not lowest <= int(port) <= MAX_PORT:
        free = " (0: a free port)" if listen else ""
        raise ConfigError(
            f"{address!r}: port {int(port)} is out of range; give {lowest}..{MAX_PORT}{free}"
        )
    return host, int(port)
