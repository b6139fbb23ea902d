"""The transaction coordinator (KIP-98, KIP-890): what transactions are open, and how they end.

``metadata`` is a transactional id's state and its record on ``__transaction_state``;
``transitions`` the pure decisions on every request (Kafka's ``TransactionCoordinator``
and ``TransactionMetadata`` rules). The drivers around them persist each decision with
acks=all before it is answered and write the markers it asks for.
"""
