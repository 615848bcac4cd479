"""GroupMetadataManager: the group cache, partition ownership and the `__consumer_offsets` log.

Kafka's GroupMetadataManager.scala keeps groups in a cache and appends GroupMetadata / OffsetCommit
records to `__consumer_offsets`. Here each group id is its own offsets partition, so `unload` /
`load` act on one group. The log is modelled by what a reload would read back: the last group
metadata record and the committed offsets per group. Every append succeeds or fails with the
configured `append_result` (scenario config `append_result`), synchronously: the append callback
runs before the call returns.
"""

from __future__ import annotations

from typing import Callable, Iterable, Optional

from model.messages import TopicPartition
from model.vocabulary import Error, GroupState, map_offset_commit_error, map_store_group_error

from reference.group import GroupMetadata, GroupMetadataRecord


class GroupMetadataManager:
    def __init__(self, not_owned_groups: Iterable[str], append_result: Error) -> None:
        self._groups: dict[str, GroupMetadata] = {}
        self._not_owned: set[str] = set(not_owned_groups)
        self.append_result = append_result
        self._group_records: dict[str, GroupMetadataRecord] = {}
        self._offset_records: dict[str, dict[TopicPartition, int]] = {}

    # --- cache ---------------------------------------------------------------------------

    def is_group_local(self, group_id: str) -> bool:
        return group_id not in self._not_owned

    def get_group(self, group_id: str) -> Optional[GroupMetadata]:
        return self._groups.get(group_id)

    def current_groups(self) -> list[GroupMetadata]:
        return list(self._groups.values())

    def add_group(self, group: GroupMetadata) -> GroupMetadata:
        """putIfNotExists: the cached group wins."""
        return self._groups.setdefault(group.group_id, group)

    def remove_group(self, group: GroupMetadata) -> bool:
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]
            return True
        return False

    def group_not_exists(self, group_id: str) -> bool:
        """GMM:206: owned and (missing or Dead)."""
        group = self._groups.get(group_id)
        return self.is_group_local(group_id) and (group is None or group.is_(GroupState.Dead))

    def mark_not_owned(self, group_id: str) -> None:
        self._not_owned.add(group_id)

    def mark_owned(self, group_id: str) -> None:
        self._not_owned.discard(group_id)

    # --- log -----------------------------------------------------------------------------

    def store_group(
        self, group: GroupMetadata, assignment: dict[str, bytes], callback: Callable[[Error], None]
    ) -> None:
        """GMM:250 storeGroup: append the group's metadata record, then run `callback` with the mapped error."""
        if self.append_result == Error.NONE:
            self._group_records[group.group_id] = group.to_record(assignment)
            callback(Error.NONE)
        else:
            callback(map_store_group_error(self.append_result))

    def store_offsets(self, group: GroupMetadata, offsets: dict[TopicPartition, int]) -> Error:
        """GMM storeOffsets: append the commits; on success they enter the group's cache."""
        if self.append_result != Error.NONE:
            return map_offset_commit_error(self.append_result)
        group.offsets.update(offsets)
        self._offset_records.setdefault(group.group_id, {}).update(offsets)
        return Error.NONE

    def append_tombstones(
        self, group_id: str, partitions: Iterable[TopicPartition], group_tombstone: bool
    ) -> None:
        """cleanupGroupMetadata's tombstones; a failed append is only logged by Kafka."""
        if self.append_result != Error.NONE:
            return
        committed = self._offset_records.get(group_id, {})
        for tp in partitions:
            committed.pop(tp, None)
        if not committed:
            self._offset_records.pop(group_id, None)
        if group_tombstone:
            self._group_records.pop(group_id, None)

    def persisted(self, group_id: str) -> tuple[Optional[GroupMetadataRecord], dict[TopicPartition, int]]:
        """What loading the partition reads back: last group record and committed offsets."""
        return self._group_records.get(group_id), dict(self._offset_records.get(group_id, {}))
