"""The broker agents' coordinators: transactions (KIP-98) and consumer groups.

Both keep their state in internal topics (``__transaction_state``, ``__consumer_offsets``) that
a broker creates on first use through the controller (:mod:`.internal_topics`); the coordinator
of a key is the leader of that key's partition of its internal topic.
"""
