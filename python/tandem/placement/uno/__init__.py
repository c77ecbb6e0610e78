"""UNO NF placement (UNO §3.2.1, Alg. 1): model, io, exact `fast` method, `milp` baseline."""
