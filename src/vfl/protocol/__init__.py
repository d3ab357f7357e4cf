"""Training protocols: the loops that drive roles through a transport."""

from vfl.protocol.base import RoundCallback, Trainer
from vfl.protocol.centralized import CentralizedTraining
from vfl.protocol.sampler import BatchSampler
from vfl.protocol.split_learning import SplitLearning

__all__ = ["BatchSampler", "CentralizedTraining", "RoundCallback", "SplitLearning", "Trainer"]
