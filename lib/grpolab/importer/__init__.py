"""importer: a verl launch script -> a recipe. The script is run isolated (sandbox, sandbox_init, sandbox_cover) with
its launchers replaced by a recorder (record); the recorded launch is composed into a recipe through the one field
map of grpolab.verl (script). The opposite direction, recipe -> launch, is grpolab.verl's.
"""
