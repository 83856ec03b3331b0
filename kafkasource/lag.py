"""The former name of kafkasource.progress_lag, kept so that existing imports go on working."""

import warnings

from kafkasource.progress_lag import Lag, LagListener, input_rows, lag_from_progress

warnings.warn("kafkasource.lag is now kafkasource.progress_lag; import from there", DeprecationWarning, stacklevel=2)

__all__ = ["Lag", "LagListener", "input_rows", "lag_from_progress"]
