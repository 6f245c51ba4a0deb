"""The apps people play with: the terminal game (:mod:`~block_env.apps.terminal`), the
browser app (:mod:`~block_env.apps.web`) and replays of recorded rounds
(:mod:`~block_env.apps.replay`)."""
