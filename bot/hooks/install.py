"""`handraise hook install|uninstall --for AGENT`: a placeholder until the installer is merged in.

It will write each agent's own settings file; until then both commands say so and exit 2.
"""

from __future__ import annotations

import argparse
import sys


def run_install(args: argparse.Namespace) -> int:
    print(f"handraise hook install --for {args.agent}: not built yet", file=sys.stderr)
    return 2


def run_uninstall(args: argparse.Namespace) -> int:
    print(f"handraise hook uninstall --for {args.agent}: not built yet", file=sys.stderr)
    return 2
