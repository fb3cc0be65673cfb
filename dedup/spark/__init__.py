"""The batch job on Apache Spark (Manku et al. §3.1, batch mode, as a MapReduce job):
every pair of fingerprints within k and their clusters, over a fingerprint file or the
stored corpus, on ``local[*]`` or a standalone cluster.

A room of the library over its pure core (it imports no crawler and no console): the
comparison inside a bucket is :func:`dedup.all_pairs.table_pairs`, the crawl's Cython kernel, imported by the
executors from the installed package. pyspark is the optional extra ``simcrawl[spark]``;
importing this package does not import it.
"""
