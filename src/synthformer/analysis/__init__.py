"""``synthformer analyze``: the paper's analysis of a trained run (attention histograms, heatmaps, mixture weights)."""
