"""The recipe layer: the strict schema, the one loader, model cards, pipeline layouts, version pins and the
memory estimate. Everything above reads recipes through here; nothing here imports from a higher layer.
"""
