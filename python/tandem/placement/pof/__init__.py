"""OVS-POF-TC flow offload (MILP-FP / MILP-FR): model, exact method, MILPs and Algorithms 1-2."""
