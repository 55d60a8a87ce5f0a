"""A dataset folder: its Parquet parts (``shards``), the rows and groups read and appended
through ``Dataset``, the split a row is written to (``splits``, ``resplit``), publishing
(``publish``: the pairs, by-shape configs and the card, from one read) and the folder's
lock."""
