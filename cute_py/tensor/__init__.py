"""Element types (``dtypes``), pointers with memory spaces and alignment (``pointer``), tensors
(``tensor``) and fake host tensors described without storage (``fake``).  Imports only :mod:`cute_py.core`."""

from .dtypes import DType, dtype_of
from .pointer import AddressSpace, Pointer, make_ptr
from .rmem import make_rmem_tensor_like
from .tensor import (Tensor, is_tensor, make_coord_tensor, make_fragment_like, make_identity_tensor, make_tensor,
                     recast_tensor)
from .engines import ArrayEngine, CoordEngine
from .partition import domain_offset, inner_partition, local_partition, local_tile, outer_partition

__all__ = ["DType", "dtype_of", "AddressSpace", "Pointer", "make_ptr", "Tensor", "ArrayEngine", "CoordEngine",
           "make_tensor", "make_identity_tensor", "make_coord_tensor", "make_fragment_like", "make_rmem_tensor_like",
           "recast_tensor",
           "domain_offset", "local_tile", "local_partition", "inner_partition", "outer_partition", "is_tensor"]
