"""`python -m memorybank`: the same as the `memorybank` command."""

from memorybank.cli import main

raise SystemExit(main())
