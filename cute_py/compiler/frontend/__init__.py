"""The compiler's front end: the decorators and host tracing (``kernel``), kernel arguments (``args``),
traced values (``values``), run-time control flow (``control``), shared memory (``smem``), loads and stores
(``memory``), and the IR builder every traced operation writes into (``builder``)."""
