"""The ``vfl privacy`` subcommand: parse arguments, compute a ``PrivacyReport``, print it."""

from __future__ import annotations

import argparse

from vfl.errors import ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``privacy`` subcommand to ``subparsers`` (its handler returns an exit status)."""
    parser = subparsers.add_parser(
        "privacy",
        help="epsilon of PBM on embeddings (worst case, per sample and party)",
        description="Epsilon of PBM with secure summation of M parties' P-wide embeddings, worst"
        " case over the other parties' inputs; see docs/privacy.md.",
    )
    parser.add_argument("--b", type=int, required=True, help="PBM trials b per coordinate")
    parser.add_argument("--beta", type=float, required=True, help="PBM beta in (0, 1/4]")
    parser.add_argument("--parties", type=int, required=True, help="number of parties M")
    parser.add_argument("--dim", type=int, required=True, help="embedding width P")
    uses = parser.add_mutually_exclusive_group(required=True)
    uses.add_argument(
        "--epochs", type=int, help="shuffled epochs: each sample used exactly E times"
    )
    uses.add_argument(
        "--rounds",
        type=int,
        help="paper's accounting: T rounds, composed over the expected T*B/N uses (needs"
        " --batch-size and --num-samples; an expectation, not a worst-case count)",
    )
    parser.add_argument("--batch-size", type=int, help="B, with --rounds")
    parser.add_argument("--num-samples", type=int, help="N, with --rounds")
    parser.add_argument("--delta", type=float, default=1e-5, help="delta (default 1e-5)")
    parser.add_argument(
        "--conversion",
        choices=("mironov", "improved"),
        default="mironov",
        help="RDP to (epsilon, delta) conversion (default mironov)",
    )
    parser.add_argument(
        "--certify",
        action="store_true",
        help="also compute the certified upper bound over the other parties' inputs (slower)",
    )
    parser.set_defaults(handler=handle)


def handle(args: argparse.Namespace) -> int:
    """Run ``vfl privacy`` for parsed ``args``; prints the report and returns 0.

    Raises:
        ConfigError: on invalid or inconsistent arguments.
    """
    from vfl.privacy.analysis import expected_uses
    from vfl.privacy.report import format_report, privacy_report

    if args.rounds is None:
        if args.batch_size is not None or args.num_samples is not None:
            raise ConfigError("--batch-size and --num-samples go with --rounds, not --epochs")
        if args.epochs < 0:
            raise ConfigError(f"--epochs must be >= 0, got {args.epochs}")
        uses, exact = float(args.epochs), True
    else:
        if args.batch_size is None or args.num_samples is None:
            raise ConfigError("--rounds needs --batch-size and --num-samples (uses = T*B/N)")
        uses = expected_uses(
            rounds=args.rounds, batch_size=args.batch_size, num_samples=args.num_samples
        )
        exact = False
    report = privacy_report(
        trials=args.b,
        beta=args.beta,
        parties=args.parties,
        dimension=args.dim,
        uses=uses,
        delta=args.delta,
        uses_exact=exact,
        conversion=args.conversion,
        certify=args.certify,
    )
    print(format_report(report))
    return 0
