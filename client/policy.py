"""The respondent's policy: :class:`~deniable.policy.Policy`, the core's, under the name the
device's users know (``deniable.client.policy``)."""

from deniable.policy import DAY, TOLERANCE, Policy, every_mechanism, question_cost

__all__ = ["DAY", "TOLERANCE", "Policy", "every_mechanism", "question_cost"]
