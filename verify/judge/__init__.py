"""Judging a member's outputs: against the reference (``judge``, ``compare``, ``trial_stats``), the verdict of its
trials and the group's consensus (``outcome``), and the findings every check adds, from which a row's status is
derived (``findings``)."""
