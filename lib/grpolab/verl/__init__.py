"""verl: the renderer (recipe -> verl launch) and verl's own config read as data (the schema oracle), both derived
from one field map. The opposite direction, a verl launch script -> a recipe, is grpolab.importer.
"""
