"""The memory bank's REST facade (Starlette) and its OpenAPI document."""
