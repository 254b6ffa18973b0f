"""verl: the renderer (recipe -> verl launch), verl's own config read as data (the schema oracle) and the
importer (a verl launch script -> a recipe).
"""
