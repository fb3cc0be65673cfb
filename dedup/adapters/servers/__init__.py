"""Process management: the embedded Redis and MongoDB servers, connecting to external
ones, a local Redis Cluster (:mod:`~dedup.adapters.servers.services`), and where the embedded
MongoDB stops serving (:mod:`~dedup.adapters.servers.embedded_limits`)."""
