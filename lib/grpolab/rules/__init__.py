"""The rules and the gate: every cross-field check of a recipe, collected in one pass, and the one verdict
(`gate`) every front end asks before anything launches.
"""
