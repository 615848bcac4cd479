"""`groupspec prove states`: the explorer and the solver reach the same states (proofs/agreement.py).

Exit 0 iff the two engines reach the same states, 1 otherwise, 2 on bad arguments.
"""

from __future__ import annotations

import argparse
from typing import Final

from model.errors import BadInput

HELP: Final = "explorer and solver reach the same states"
DESCRIPTION: Final = "explorer / solver reachable-state agreement"

# proofs.agreement.AgreementBounds' defaults (that module loads z3: imported when the check runs)
IDS, STATIC, DYNAMIC, GENERATION = 2, 0, 1, 1


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ids", type=int, default=IDS, help=f"member ids (default {IDS})")
    p.add_argument("--static", type=int, default=STATIC,
                   help=f"static clients = instance ids (default {STATIC})")
    p.add_argument("--dynamic", type=int, default=DYNAMIC, help=f"dynamic clients (default {DYNAMIC})")
    p.add_argument("--generation", type=int, default=GENERATION,
                   help=f"generation bound (default {GENERATION})")


def run(a: argparse.Namespace) -> int:
    if a.ids < 1 or a.static < 0 or a.dynamic < 0 or a.generation < 0 \
            or a.static > a.ids or a.dynamic + a.static < 1:
        raise BadInput("expected --ids >= 1, 0 <= --static <= --ids, --dynamic >= 0, at least "
                       "one client, --generation >= 0")
    from model.table import CLASSIC_TABLE, URGENT
    from proofs.agreement import AgreementBounds, check_agreement
    b = AgreementBounds(ids=a.ids, instances=a.static, dynamic=a.dynamic, max_generation=a.generation)
    rep = check_agreement(CLASSIC_TABLE, URGENT, b)
    print(rep.summary())
    return 0 if rep.ok else 1
