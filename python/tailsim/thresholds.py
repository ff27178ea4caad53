"""Priority-class thresholds for commodity priority queues (pFabric §6.1 and Appendix A)."""

from __future__ import annotations

from . import _core


def thresholds(cdf: str, load: float, classes: int, rule: str = "optimal") -> tuple[list[int], float]:
    """Flow-size thresholds (bytes) that split ``cdf``'s flows into ``classes`` strict-priority classes, and
    the M/G/1 model's mean normalized FCT with them.

    ``rule="optimal"`` minimizes the model's mean normalized FCT at ``load`` (what
    ``transport.class_thresholds = "optimal"`` uses); ``rule="equal-count"`` gives each class the same share
    of flows. ``cdf`` is a built-in name or a CDF file. Raises ``tailsim.ConfigError`` on bad input.

    >>> t, fct = tailsim.thresholds("websearch", 0.1, 2)   # doctest: +SKIP
    >>> t                                                   # ~854 KB: the paper's ~880 KB with 1500 B packets
    """
    return _core.class_thresholds(cdf, float(load), int(classes), rule)
