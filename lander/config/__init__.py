"""Configuration: the structured schema (every key's type), value checks, the command-line precheck that runs before
Hydra writes anything, unknown-key suggestions, and the targets a config may import (trust)."""
