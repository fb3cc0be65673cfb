"""Process management: the embedded Redis and MongoDB servers, connecting to external
ones, a local Redis Cluster (:mod:`~dedup.servers.services`), and where the embedded
MongoDB stops serving (:mod:`~dedup.servers.embedded_limits`)."""
