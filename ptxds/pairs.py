"""The ``pairs`` config now lives in ``dataset_spec.pairs`` (``Dataset.publish`` writes it);
its names stay importable from here."""
from dataset_spec.pairs import (KILLED_STATUSES, classify_mutant, is_killed, make_pairs,  # noqa: F401
                                mutation_of, pair_maker, publish, write_pairs)
