"""The rules and the gate: every cross-field check of a recipe, collected in one pass, and the one verdict
(`gate`) every front end asks before anything launches.

registry: every rule id, declared once; validate: runs the families, one module per family (the modules it
imports); checks: the collector they report through; maths: what they compute (what they read off a
recipe beyond its fields, the recipe answers itself: grpolab.recipe.schema.Recipe); gate: the verdict; docs:
docs/rules.md.
"""
