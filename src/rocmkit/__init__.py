"""rocmkit: doctor, hipify, train, bench, infer and profile AI work on ROCm, CUDA and CPU."""

from rocmkit.errors import MissingExtraError, RocmkitWarning, UserError

__version__ = "0.1.0"

__all__ = ["MissingExtraError", "RocmkitWarning", "UserError", "__version__"]
