"""Timing: samples until the median converges (``timing``), timing whose outputs are checked (``checked_timing``) and
the roofline floor of a time (``roofline``)."""
