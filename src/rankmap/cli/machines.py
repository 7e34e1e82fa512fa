"""``rankmap machines``: list the built-in machine profiles."""

from __future__ import annotations

import argparse
from typing import Any

from rankmap.cli.common import add_json
from rankmap.cli.context import AppContext


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "machines",
        help="list built-in machine profiles",
        description="List the built-in machine profiles usable with --machine.",
    )
    add_json(parser)


def run(args: argparse.Namespace, ctx: AppContext) -> int:
    from rankmap.inventory import builtin_profiles, load_machine

    rows = []
    for profile in builtin_profiles():
        hosts = load_machine(profile.name)
        gpus = sum(len(h.gpus) for h in hosts)
        rows.append({"name": profile.name, "gpus": gpus, "description": profile.description})
    if args.json:
        from rankmap.render.json import dumps

        ctx.stdout.write(
            dumps(
                {
                    "schema": "rankmap/1",
                    "command": "machines",
                    "verdict": "ok",
                    "findings": [],
                    "placements": [],
                    "machines": rows,
                }
            )
        )
        return 0
    from rankmap.render.machines import render_machines

    render_machines(rows, ctx)
    return 0
