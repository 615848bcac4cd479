"""The spec: Kafka 3.9's classic group coordinator as a transition table, and what it means.

A reader of the spec needs only this package; everything that checks it lives in check/ and the
floors above (import-linter keeps model/ free of them, the native engine included).

    vocabulary.py          Kafka's own words: group states, events, error codes, API versions
    messages.py            request and response records with Kafka's field names
    state.py               the group as the table sees it (immutable, hashable records)
    dsl.py                 the table's language: atoms, guards, effects, reply forms, rows
    atoms.py               spec text: each guard atom, citing the Kafka line it asks about
    effects.py             spec text: each effect and the group fields it may change
    replies.py             spec text: how a row's reply column becomes a response
    protocol_selection.py  GroupMetadata.selectProtocol as a pure function
    table.py               THE transition table: one row per (state, event, guard)
    step.py                step semantics: find the one matching row, apply it
    invariants.py          the named invariants and the client's contract
    modes.py               the concrete and abstract modes' settings
    concrete.py            the concrete mode as a coordinator (real ids, a virtual clock)
    coordinator_api.py     the interface every scenario target implements
    visible.py             what a client sees of a response (the fields a scenario checks)
    errors.py              the boundary errors of every command and their exit codes
    atomic.py              the one atomic writer of every report and output directory
"""
