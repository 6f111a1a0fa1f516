"""What the test suite and the benchmarks share, so that neither imports the other (ADR 0033).

Run from a checkout only, never shipped: `served` runs `memorybank serve` as a real process, `clusters` starts
private MariaDB, Galera and Spider nodes, `secret_cases` holds the credentials the secret screen must refuse and
the secret-sounding memories it must accept, and `ci` says whether a missing server may skip. It imports
neither `tests` nor `benchmarks` (`lint-imports`).
"""
