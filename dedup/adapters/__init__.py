"""The adapters: the stores of the decision's evidence on the servers. The Redis index
(one node: :mod:`~dedup.adapters.redis_index`; a cluster: :mod:`~dedup.adapters.redis_cluster`,
:mod:`~dedup.adapters.sharded`; chosen by :mod:`~dedup.adapters.index`), the checksum registry,
the template counts and the pinyin windows in Redis, the admission journal, the MongoDB page
store (:mod:`~dedup.adapters.mongo`) and the facts read from it, the registration of
originals, and the deduplicator wired to them (:mod:`~dedup.adapters.on_servers`).

The pure core (the rest of :mod:`dedup`) imports none of them (``tests/unit/test_imports.py``).
"""
