"""The all-pairs and clustering job as Spark DataFrames.

The paper's MapReduce batch mode (Manku et al. §3.1), with the tables of
:func:`dedup.all_pairs.batch_design`:

1. **map**: every fingerprint becomes one row per permuted table, ``(table, bucket, id,
   fp)``, ``bucket`` being the leading bits of its permuted value;
2. **shuffle**: rows are partitioned by ``(table, bucket)``, so a bucket is whole in one
   partition;
3. **reduce**: each partition runs :func:`dedup.all_pairs.position_pairs` (the crawl's Cython
   kernel) on each of its tables' rows. A pair of distinct values is reported only by the
   first table whose prefix it shares, and identical values only by the first table, so
   the union of the partitions' answers holds every pair within k exactly once: one
   shuffle, no join, no ``distinct``;
4. the clusters are the connected components of the pairs' graph, found by min-label
   propagation with pointer jumping, in Spark: nothing that grows with the pairs is ever
   collected to the driver.

Inputs are DataFrames with columns ``id`` (input positions, or page ids) and ``fp`` (the
fingerprint as a signed 64-bit integer, its two's complement, as Spark and BSON store it);
:mod:`dedup.spark.stage` writes them as Parquet.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from dedup.all_pairs import batch_design, position_pairs
from dedup.tables import Design

#: Rows of ``(table, bucket, id, fp)`` per shuffle partition the job aims for (tens of MB
#: to sort in one Python worker).
ROWS_PER_PARTITION = 2_000_000


def _keys(design: Design) -> Any:
    """The map step: ``id, fp`` batches to ``table, bucket, id, fp`` batches."""
    import pyarrow as pa

    shifts = [np.uint64(64 - t.prefix_bits) for t in design.tables]

    def keys(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            fps = np.asarray(batch.column("fp").to_numpy(zero_copy_only=False),
                             dtype=np.int64)
            ids = batch.column("id")
            for t, table in enumerate(design.tables):
                bucket = table.permute_array(fps.view(np.uint64)) >> shifts[t]
                yield pa.RecordBatch.from_arrays(
                    [pa.array(np.full(len(fps), t, dtype=np.int32)),
                     pa.array(bucket.astype(np.int64)), ids, pa.array(fps)],
                    names=["table", "bucket", "id", "fp"])
    return keys


def _scan(design: Design, k: int) -> Any:
    """The reduce step: one partition's rows to the pairs within ``k`` its buckets hold."""
    import pyarrow as pa

    def scan(batches: Iterator[Any]) -> Iterator[Any]:
        batches = list(batches)
        if not batches:
            return
        rows = pa.Table.from_batches(batches)
        table_of = rows.column("table").to_numpy()
        fps = rows.column("fp").to_numpy().view(np.uint64)
        ids = rows.column("id").combine_chunks()
        for t in np.unique(table_of):
            where = np.flatnonzero(table_of == t)
            found = position_pairs(fps[where], k, design, tables=[int(t)],
                                   identical=t == 0)
            if len(found):
                x, y = where[found[:, 0]], where[found[:, 1]]
                yield pa.RecordBatch.from_arrays(
                    [ids.take(x), ids.take(y), pa.array(found[:, 2].astype(np.int32)),
                     pa.array(fps[x].view(np.int64)), pa.array(fps[y].view(np.int64))],
                    names=["x", "y", "distance", "fp_x", "fp_y"])
    return scan


def partitions_for(rows: int, parallelism: int) -> int:
    """Shuffle partitions for ``rows`` map rows: at least two per core, at most
    :data:`ROWS_PER_PARTITION` rows each."""
    return max(2 * max(parallelism, 1), math.ceil(rows / ROWS_PER_PARTITION))


def find_all(points: Any, k: int, design: Design | None = None,
             partitions: int | None = None) -> Any:
    """Every pair of ids whose fingerprints are within ``k`` bits.

    Args:
        points: a DataFrame ``id, fp``.
        k: the largest Hamming distance.
        design: the tables (default: :func:`dedup.all_pairs.batch_design` for the number of
            fingerprints).
        partitions: shuffle partitions (default: :func:`partitions_for`).

    Returns:
        A DataFrame ``i, j, distance, fp_i, fp_j``: ids ``i < j`` and their fingerprints
        (signed). Identical fingerprints are pairs at distance 0.

    Raises:
        ValueError: the design is for a smaller ``k``.
    """
    from pyspark.sql import functions as F

    points = points.select("id", "fp")
    n = points.count()
    design = design or batch_design(n, k)
    if design.k < k:
        raise ValueError(f"design {design.name!r} finds k <= {design.k}, not {k}")
    partitions = partitions or partitions_for(
        n * len(design.tables), points.sparkSession.sparkContext.defaultParallelism)
    id_type = points.schema["id"].dataType.simpleString()
    found = (points.mapInArrow(_keys(design),
                               f"table int, bucket long, id {id_type}, fp long")
             .repartition(partitions, "table", "bucket")
             .mapInArrow(_scan(design, k), f"x {id_type}, y {id_type}, distance int, "
                         "fp_x long, fp_y long"))
    first = F.col("x") < F.col("y")
    return found.select(F.when(first, F.col("x")).otherwise(F.col("y")).alias("i"),
                        F.when(first, F.col("y")).otherwise(F.col("x")).alias("j"),
                        "distance",
                        F.when(first, F.col("fp_x")).otherwise(F.col("fp_y")).alias("fp_i"),
                        F.when(first, F.col("fp_y")).otherwise(F.col("fp_x")).alias("fp_j"))


def components(edges: Any, max_rounds: int = 64) -> Any:
    """The connected components of a graph, by min-label propagation with pointer jumping.

    Every round, each node takes the smallest label among itself and its neighbours, then
    the label of its label (pointer jumping: a chain of length L settles in about log L
    rounds instead of L); it stops when a round changes no label. Each round's labels are
    checkpointed, so the plan does not grow with the rounds.

    Args:
        edges: a DataFrame ``i, j`` (any orderable id type).
        max_rounds: a bound that a correct run never reaches.

    Returns:
        A DataFrame ``id, cluster``: every node of an edge, and the smallest id of its
        component.

    Raises:
        RuntimeError: no convergence in ``max_rounds`` rounds.
    """
    from pyspark.sql import functions as F

    both = (edges.select(F.col("i").alias("src"), F.col("j").alias("dst"))
            .unionByName(edges.select(F.col("j").alias("src"), F.col("i").alias("dst")))
            .persist())
    labels = (both.groupBy("src").agg(F.min("dst").alias("m"))
              .select(F.col("src").alias("id"), F.least("src", "m").alias("cluster"))
              .localCheckpoint())
    for _ in range(max_rounds):
        heard = (both.join(labels, both.dst == labels.id)
                 .groupBy("src").agg(F.min("cluster").alias("heard")))
        taken = (labels.join(heard, labels.id == heard.src)
                 .select("id", F.least("cluster", "heard").alias("cluster")))
        hop = taken.select(F.col("id").alias("via"), F.col("cluster").alias("via_cluster"))
        jumped = (taken.join(hop, taken.cluster == hop.via, "left")
                  .select("id", F.least("cluster", F.coalesce("via_cluster", "cluster"))
                          .alias("cluster"))
                  .localCheckpoint())
        before = labels.select("id", F.col("cluster").alias("before"))
        changed = jumped.join(before, "id").where(F.col("cluster") != F.col("before")).count()
        labels = jumped
        if not changed:
            both.unpersist()
            return labels
    raise RuntimeError(f"connected components did not settle in {max_rounds} rounds")


def clusters(pairs: Any) -> Any:
    """Clusters of the pairs' graph: a DataFrame ``cluster, size, members`` (members sorted;
    ``cluster`` is the smallest member)."""
    from pyspark.sql import functions as F

    return (components(pairs.select("i", "j")).groupBy("cluster")
            .agg(F.count("id").alias("size"), F.sort_array(F.collect_list("id")).alias("members")))


def _hex(column: str) -> Any:
    from pyspark.sql import functions as F

    return F.lower(F.lpad(F.hex(column), 16, "0"))


def pair_records(pairs: Any) -> Any:
    """The pairs as the command prints them, ordered by ``i`` then ``j``: ``i, j,
    distance, a, b`` (``a``, ``b``: the fingerprints as 16 hex digits)."""
    from pyspark.sql import functions as F

    # kept (on the executors) so that ordering them does not run the search twice: once to
    # sample the range boundaries, once to sort
    return (pairs.select("i", "j", "distance", _hex("fp_i").alias("a"), _hex("fp_j").alias("b"))
            .persist().orderBy("i", "j").select("i", "j", "distance", "a", "b")
            .withColumn("distance", F.col("distance").cast("int")))


def cluster_records(points: Any, pairs: Any) -> Any:
    """The clusters as the command prints them, largest first, then by first member:
    ``size, members, fingerprints`` (members sorted; fingerprints as 16 hex digits, in the
    members' order)."""
    from pyspark.sql import functions as F

    member = (components(pairs.select("i", "j").persist())
              .join(points.select("id", _hex("fp").alias("hex")), "id"))
    return (member.groupBy("cluster")
            .agg(F.count("id").alias("size"),
                 F.sort_array(F.collect_list(F.struct("id", "hex"))).alias("m"))
            .orderBy(F.col("size").desc(), F.col("cluster"))
            .select("size", F.col("m.id").alias("members"),
                    F.col("m.hex").alias("fingerprints")))


def anchor_pairs(anchors: Any, read: int, matches: int) -> Any:
    """The pairs of pages the crawl's text anchors make candidates of each other, as
    :func:`dedup.reconcile.anchor_pairs` finds them in process: two pages sharing
    ``matches`` of a page's anchors that are evidence (an anchor more than ``read`` other
    pages share is passed over), or fewer when that page has fewer.

    Args:
        anchors: a DataFrame ``id, anchor`` (one row per page and anchor, distinct).

    Returns:
        A DataFrame ``i, j`` (``i < j``).
    """
    from pyspark.sql import functions as F

    evidence = (anchors.groupBy("anchor").agg(F.count("id").alias("n"))
                .where(F.col("n") <= read + 1).select("anchor"))
    kept = anchors.join(evidence, "anchor").persist()
    usable = kept.groupBy("id").agg(F.count("anchor").alias("usable"))
    left = kept.select(F.col("id").alias("i"), "anchor")
    right = kept.select(F.col("id").alias("j"), "anchor")
    shared = (left.join(right, "anchor").where(F.col("i") < F.col("j"))
              .groupBy("i", "j").agg(F.count("anchor").alias("shared")))
    ui = usable.select(F.col("id").alias("i"), F.col("usable").alias("ui"))
    uj = usable.select(F.col("id").alias("j"), F.col("usable").alias("uj"))
    return (shared.join(ui, "i").join(uj, "j")
            .where((F.col("shared") >= F.least(F.lit(matches), "ui"))
                   | (F.col("shared") >= F.least(F.lit(matches), "uj")))
            .select("i", "j"))


def candidates(points: Any, anchors: Any, k: int, read: int, matches: int) -> Any:
    """The pairs within ``k`` and the text anchors' pairs, each once: ``i, j, distance,
    by`` (``by``: ``k`` or ``anchors``; the anchors' pairs with their fingerprints'
    distance)."""
    from pyspark.sql import functions as F

    within = find_all(points, k).select("i", "j", "distance").persist()
    by_anchor = anchor_pairs(anchors, read, matches).join(within.select("i", "j"),
                                                         ["i", "j"], "left_anti")
    fp_i = points.select(F.col("id").alias("i"), F.col("fp").alias("fi"))
    fp_j = points.select(F.col("id").alias("j"), F.col("fp").alias("fj"))
    return within.withColumn("by", F.lit("k")).unionByName(
        by_anchor.join(fp_i, "i").join(fp_j, "j")
        .select("i", "j", F.bit_count(F.col("fi").bitwiseXOR(F.col("fj"))).cast("int")
                .alias("distance"), F.lit("anchors").alias("by")))
