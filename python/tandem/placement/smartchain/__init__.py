"""SmartChain element-graph placement: model, io, exact methods, Fig. 6 ILP and strawmen."""
