"""A reward written for verl's per-dataset scorers (two positional arguments): verl's managers call it with
data_source=, solution_str=, ground_truth=, extra_info= and it fails at the first reward (tests/test_rules.py)."""


def compute_score(solution_str, ground_truth):
    return 1.0 if solution_str.strip() == ground_truth else 0.0
