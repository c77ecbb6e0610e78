"""Real network functions (dp-nf) from Python: configuration schemas for the
scenario's ``nf_types.*.type`` and traffic that exercises them."""
