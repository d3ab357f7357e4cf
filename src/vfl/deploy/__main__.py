"""``python -m vfl.deploy server|party|launch|certs``: the deployment commands on their own."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from vfl.deploy.cli import register
from vfl.errors import VflError


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the command line and run one deployment command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m vfl.deploy", description=__doc__)
    register(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"))
    args = parser.parse_args(argv)
    try:
        status: int = args.handler(args)
        return status
    except VflError as error:
        print(f"vfl: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("vfl: interrupted; continue with --resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
