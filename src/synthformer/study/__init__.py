"""``synthformer study``: one run per (variant, seed) with equal budgets, tables, curves and a report."""
