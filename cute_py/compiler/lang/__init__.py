"""The kernel language: the IR builder, traced values and numbers, register tensors (TensorSSA), memory, shared memory and structs."""
