"""The ``vfl privacy`` subcommand: parse arguments, compute a ``PrivacyReport``, print it."""

from __future__ import annotations

import argparse

from vfl.errors import ConfigError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``privacy`` subcommand to ``subparsers`` (its handler returns an exit status)."""
    parser = subparsers.add_parser(
        "privacy",
        help="epsilon of PBM on embeddings, or of Gaussian noise on the gradients (labels)",
        description="Epsilon of PBM with secure summation of M parties' P-wide embeddings, worst"
        " case over the other parties' inputs (--b --beta --parties --dim); or of the label"
        " holder's Gaussian gradient noise (--noise-multiplier); see docs/privacy.md.",
    )
    parser.add_argument("--b", type=int, help="PBM trials b per coordinate")
    parser.add_argument("--beta", type=float, help="PBM beta in (0, 1/4]")
    parser.add_argument(
        "--parties",
        type=int,
        help="PBM: number of parties M; with --noise-multiplier: passive parties that receive"
        " gradients (default 1)",
    )
    parser.add_argument("--dim", type=int, help="PBM: embedding width P")
    parser.add_argument(
        "--noise-multiplier",
        type=float,
        help="the labels' epsilon instead: Gaussian gradient noise z (privacy.gradient_noise)",
    )

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
        choices=("improved", "mironov"),
        default="improved",
        help="RDP to (epsilon, delta) conversion: improved (Balle et al. 2020, the default) or"
        " the looser mironov (2017)",
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
    from vfl.privacy.report import format_label_report, format_report, privacy_report

    if args.noise_multiplier is not None:
        _check_label_arguments(args)
        parties = 1 if args.parties is None else args.parties
        print(format_label_report(args.noise_multiplier, parties, args.epochs, args.delta))
        return 0
    missing = [f"--{n}" for n in ("b", "beta", "parties", "dim") if getattr(args, n) is None]
    if missing:
        raise ConfigError(
            f"vfl privacy needs {', '.join(missing)} for PBM's epsilon, or --noise-multiplier"
            " for the labels' epsilon under gradient noise"
        )
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


def _check_label_arguments(args: argparse.Namespace) -> None:
    """``--noise-multiplier`` takes ``--epochs``, ``--parties`` and ``--delta`` only."""
    pbm = [f"--{n}" for n in ("b", "beta", "dim") if getattr(args, n) is not None]
    if pbm or args.rounds is not None or args.certify:
        given = pbm + (["--rounds"] if args.rounds is not None else [])
        given += ["--certify"] if args.certify else []
        raise ConfigError(
            f"--noise-multiplier gives the labels' epsilon; {', '.join(given)} are PBM's: drop"
            " them (or --noise-multiplier)"
        )
    if not args.noise_multiplier > 0:
        raise ConfigError(f"--noise-multiplier must be > 0, got {args.noise_multiplier}")
    parties = 1 if args.parties is None else args.parties
    if parties < 1 or args.epochs is None or args.epochs < 0:
        raise ConfigError(
            f"--noise-multiplier needs --epochs >= 0 and --parties >= 1, got {args.epochs} and"
            f" {parties}"
        )
