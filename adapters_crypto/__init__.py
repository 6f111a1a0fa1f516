"""adapters_crypto: encryption at rest for the memory bank (the core's `Sealer` port).

`AesGcmSealer` seals stored text with AES-256-GCM from the `cryptography` package and derives
the blind-index key with its HKDF; `KeyRing` and its file functions hold the named keys.
Imports the core and `cryptography` only: storage receives a `Sealer` from the composition root.
"""

from adapters_crypto.keyring import (
    FILE_MODE,
    KeyRing,
    load_key_ring,
    loose_permissions,
    new_key_ring,
    parse_key_ring,
    write_key_ring,
)
from adapters_crypto.sealer import AesGcmSealer, KeyedBlindIndex, derive_document_mac_key, derive_index_key

__all__ = [
    "FILE_MODE",
    "AesGcmSealer",
    "KeyRing",
    "KeyedBlindIndex",
    "derive_document_mac_key",
    "derive_index_key",
    "load_key_ring",
    "loose_permissions",
    "new_key_ring",
    "parse_key_ring",
    "write_key_ring",
]
