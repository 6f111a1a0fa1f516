"""`python -m memorybank`: the same as the `memorybank` command."""

from memorybank.entry import main

raise SystemExit(main())
