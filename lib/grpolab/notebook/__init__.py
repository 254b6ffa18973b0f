"""What the notebooks call: each cell of notebooks/*.ipynb is one or two calls into this module.

    check_parameters(globals())   the cell after `parameters`: every declared parameter has its declared type, and
                                  a name that papermill injected but the notebook does not declare (`-p modle
                                  tiny`: papermill only warns) stops the notebook, naming the closest parameter
    load(model, overrides)        the recipe, or a stop that names the closest recipe or the bad override
    from_script / check_recipe / show_recipe / show_launch / show_data / stop_on_errors     01_setup
    preflight / preflight_verdict                                       02_preflight
    resume_plan / launch / follow / verdict                             03_launch
    find_run / watch / show_run / verdict                               04_monitor
    compare_runs                                                        06_compare, 04_monitor's comparison
    Stages                                                              run.ipynb: runs 01..04 with papermill

A wrong input raises `NotebookStop`: Jupyter, papermill and nbval show its message, without a traceback, and
papermill exits non-zero. Output is meant to stay small: progress is printed sparsely (a line every 30 s while a
run is followed), tables are HTML with a plain-text twin, pictures are PNG files (headless runs never need
widgets; only `watch(..., live=True)` in JupyterLab imports ipywidgets). Secrets never reach an output: the
recipe's env is shown through grpolab.recipe.secrets.redaction.

How a misspelled parameter is caught: papermill writes the parameters it is given as plain assignments in a
cell of their own (first line `# Parameters`, tagged `injected-parameters`) right after the `parameters` cell,
and IPython keeps the source of every executed cell in `In`. `check_parameters` reads the most recent injected
cell executed after the parameters cell, parses it with `ast`, and compares the names it assigns with the
names the parameters cell declares (its annotations, `__annotations__`). This needs no marker in the notebook,
is exact (a variable the user defines in a later cell is never mistaken for a parameter) and also works when
an executed notebook is re-run in JupyterLab.
"""

from grpolab.notebook.compare import compare_runs, latest_runs  # noqa: F401
from grpolab.notebook.data import show_data  # noqa: F401
from grpolab.notebook.display import (  # noqa: F401
    FOLLOW_EVERY_S,
    STAGES,
    NotebookStop,
    in_jupyterlab,
    show_problems,
    table_html,
    to_terminal,
)
from grpolab.notebook.parameters import check_parameters  # noqa: F401
from grpolab.notebook.plan import (  # noqa: F401
    own_layout,
    plan_explorer,
    plan_figure,
    plan_layouts,
    plan_overrides,
    plan_points,
    plan_verdict,
    plot_plan,
    show_modes,
    show_plan,
)
from grpolab.notebook.runner import Stages, dry_run_failures  # noqa: F401
from grpolab.notebook.setup import (  # noqa: F401
    STAGE_SECRETS_VAR,
    check_address,
    check_new_run_id,
    check_recipe,
    from_script,
    load,
    mask_overrides,
    show_launch,
    show_recipe,
    stop_on_dropped,
    stop_on_errors,
    unmask_overrides,
)
from grpolab.notebook.stages import (  # noqa: F401
    find_run,
    follow,
    launch,
    preflight,
    preflight_verdict,
    resume_plan,
    show_head,
    show_offpolicy,
    show_run,
    verdict,
    watch,
)
