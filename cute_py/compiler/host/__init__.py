"""The host side of the compiler: ``@jit``, ``@kernel`` and ``cute.compile``, host tracing and the launches it records."""
