"""The layout planner: valid parallel layouts of a recipe's model on its cluster, ranked by an estimate."""
