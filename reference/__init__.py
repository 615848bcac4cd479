# How this package is laid out: an independent re-implementation of Kafka 3.9's classic (Scala)
# GroupCoordinator, shaped like Kafka's own code, used as the second opinion against model/.
#   errors.py      typed exceptions (IllegalStateTransition = Kafka's transitionTo IllegalStateException)
#   group.py       GroupMetadata + MemberMetadata (GroupMetadata.scala, MemberMetadata.scala)
#   purgatory.py   virtual clock, purgatory, DelayedJoin/InitialDelayedJoin/DelayedHeartbeat/DelayedSync
#   manager.py     GroupMetadataManager: group cache, partition ownership, the __consumer_offsets log
#   coordinator.py ReferenceCoordinator (GroupCoordinator.scala handlers, timers, backdoor, recording)
#   bugs.py        seeded bugs (negative controls), name -> description
# It imports only model.vocabulary, model.messages and model.coordinator_api (import-linter enforces it).
"""The independent reference coordinator (Kafka 3.9 classic GroupCoordinator)."""

from reference.bugs import BUGS
from reference.coordinator import ReferenceCoordinator
from reference.errors import IllegalGroupState, IllegalStateTransition, ReferenceUsageError

__all__ = ["BUGS", "IllegalGroupState", "IllegalStateTransition", "ReferenceCoordinator", "ReferenceUsageError"]
