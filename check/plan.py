"""The default check plan: several bounded explorations whose row coverage is merged.

No single bound reaches every row cheaply: well-behaved clients never send a stale generation,
static members need their own clients, group.max.size needs a small limit, partition moves and
append failures multiply the state space. Each entry says what it is for; `groupspec check`
without bound options runs them all: DEFAULT_PLAN with the native engine, PYTHON_PLAN (the first
ten) with `--engine python`.
"""

from __future__ import annotations

from typing import Final

from check.abstract import Bounds

F = frozenset

PYTHON_PLAN: Final[tuple[tuple[str, Bounds], ...]] = (
    ("closed: 3 consumers, timeouts and a stalling client",
     Bounds(dynamic=3, max_generation=1, faults=F({"session", "rebalance", "stall"}))),
    ("closed: 2 consumers, crashes and lost responses",
     Bounds(dynamic=2, max_generation=1, max_ids_per_client=1,
            faults=F({"session", "rebalance", "crash", "lost"}))),
    ("closed: a static consumer, crashes (static restarts) and lost responses",
     Bounds(dynamic=0, static=1, max_generation=1,
            faults=F({"session", "rebalance", "crash", "lost"}))),
    ("closed: a dynamic and a static consumer, crashes, a static client reusing a pending id",
     Bounds(dynamic=1, static=1, max_generation=1, max_ids_per_client=1,
            faults=F({"session", "rebalance", "crash", "impersonate"}))),
    ("closed: one consumer, partition unload/load, offsets expiry, append failures",
     Bounds(dynamic=1, max_generation=2,
            faults=F({"session", "rebalance", "unload", "offsets", "append"}))),
    ("closed: JoinGroup v0-3 (no MEMBER_ID_REQUIRED), members changing their metadata",
     Bounds(dynamic=2, max_generation=1, faults=F({"session", "rebalance"}),
            require_known_member_id=False, metadata_changes=True)),
    ("closed: group.max.size 1",
     Bounds(dynamic=2, max_generation=1, faults=F({"session", "rebalance"}), group_max_size=1)),
    ("open: any request from a dynamic client",
     Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1,
            faults=F({"session", "rebalance", "unload", "offsets", "append"}))),
    ("open: any request from a static client",
     Bounds(static=1, dynamic=0, max_generation=1, mode="open", max_ids_per_client=1,
            faults=F({"session", "rebalance", "unload", "append"}))),
    ("open: the empty group id (INVALID_GROUP_ID; only OffsetCommit creates the group)",
     Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1, group_id="",
            faults=F({"session", "rebalance", "unload", "offsets", "append"}))),
)

SRS = F({"session", "rebalance", "stall"})

# The default plan (native engine): the runs above plus bounds only the native engine finishes
# in about a minute on this machine (benchmarks/explore_results.md).
DEFAULT_PLAN: Final[tuple[tuple[str, Bounds], ...]] = PYTHON_PLAN + (
    ("closed: 4 consumers, timeouts and a stalling client",
     Bounds(dynamic=4, max_generation=1, faults=SRS)),
    ("closed: 3 consumers, two rebalances (generation 2), timeouts and a stalling client",
     Bounds(dynamic=3, max_generation=2, faults=SRS)),
    ("closed: 3 consumers, three rebalances (generation 3), timeouts and a stalling client",
     Bounds(dynamic=3, max_generation=3, faults=SRS)),
    ("closed: 5 consumers, timeouts and a stalling client",
     Bounds(dynamic=5, max_generation=1, faults=SRS)),
)

# The states each run of the default plan explores at most, unless --max-states says otherwise.
# On Kafka's table the largest run has 723,779 states; a table whose state space outgrows the
# bounds (a mutant that never bumps the generation: 16 M states in the 4-consumer run, 8 minutes)
# is cut short there and reported so (never a pass: exit 3, or 1 with its counterexamples).
PLAN_MAX_STATES: Final = 2_000_000

# The plan `groupspec check --engine python` runs, and on which tests/engine checks that both
# explorers agree exactly (states, edges, depth, rows, verdicts): Python finishes it in CI time.
AGREEMENT_PLAN: Final[tuple[tuple[str, Bounds], ...]] = PYTHON_PLAN

# The refinement plan: the lockstep searches `groupspec check --refines` and `groupspec diff` run
# when no bound option is given (check/diff.py explore_diff_plan; they stop at the first that
# finds a difference). Each is small enough for the Python lockstep (a pair of sets of worlds per
# node, so a few thousand nodes cost what a hundred thousand states cost the explorer); together
# they reach what the check plan reaches: misbehaving clients, static members and impersonation,
# partition moves and append failures, JoinGroup v0-3 and group.max.size
# (benchmarks/refinement_plan_results.md: time and row coverage on Kafka's table).
REFINEMENT_PLAN: Final[tuple[tuple[str, Bounds], ...]] = (
    # cheap runs first (about a second each on Kafka's table), so a table that differs there is
    # answered at once; then the open-mode clients, which find most differences in a few inputs;
    # the large closed-mode runs last. Runs shared with the check plan are taken from it.
    PYTHON_PLAN[2],  # a static consumer, crashes (static restarts) and lost responses
    ("closed: a static consumer, partition unload/load",
     Bounds(dynamic=0, static=1, max_generation=1,
            faults=F({"session", "rebalance", "crash", "unload"}))),
    PYTHON_PLAN[4],  # one consumer, partition unload/load, offsets expiry, append failures
    PYTHON_PLAN[5],  # JoinGroup v0-3, members changing their metadata
    PYTHON_PLAN[6],  # group.max.size 1
    ("closed: 2 consumers, crashes and lost responses (no timeouts: with them, minutes)",
     Bounds(dynamic=2, max_generation=1, max_ids_per_client=1, faults=F({"crash", "lost"}))),
    ("open: any request from one dynamic client, append failures",
     Bounds(dynamic=1, max_generation=1, mode="open", max_ids_per_client=1,
            faults=F({"session", "rebalance", "append"}))),
    ("open: any request from one static client, append failures",
     Bounds(static=1, dynamic=0, max_generation=1, mode="open", max_ids_per_client=1,
            faults=F({"session", "rebalance", "append"}))),
    ("closed: a static restart after a subscription change",
     Bounds(dynamic=1, static=1, max_generation=2, metadata_changes=True, max_ids_per_client=1,
            faults=F({"crash"}))),
    ("closed: 2 consumers, timeouts and a stalling client, two rebalances",
     Bounds(dynamic=2, max_generation=2, faults=SRS)),
    PYTHON_PLAN[3],  # a dynamic and a static consumer, crashes, impersonation
)
