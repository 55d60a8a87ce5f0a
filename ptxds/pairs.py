"""The ``pairs`` config now lives in ``dataset_spec.store.pairs`` (``Dataset.publish`` writes it,
dataset_spec/store/publish.py); its names stay importable from here."""
from dataset_spec.store.pairs import KILLED_STATUSES, classify_mutant, is_killed, make_pairs, mutation_of  # noqa: F401
from dataset_spec.store.publish import publish, write_pairs  # noqa: F401
