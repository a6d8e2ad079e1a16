"""A kernel's control flow: the AST rewrite, liveness, the ``if``/``for``/``while`` executors and their carried values."""
