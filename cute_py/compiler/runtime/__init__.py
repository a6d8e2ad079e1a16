"""The compiler's runtime: compiled objects (``compiled``), the CUDA driver and launches (``launch``),
launch limits of sm_90 (``limits``), the in-memory and disk caches (``cache``) and what a compile depended
on (``deps``)."""
