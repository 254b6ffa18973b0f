"""The layout planner: valid parallel layouts of a recipe's model on its cluster, ranked by the one cost model.

space (the layouts considered), search (screening, pricing, ranking), io (what is read and written), hints
(`check`'s nearest layouts), table (entries, rows, legends), baselines (published runs as facts).
"""
