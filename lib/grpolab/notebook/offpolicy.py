"""04_monitor's view of an asynchronous run (issue 42): its off-policy figures (grpolab.monitor.offpolicy) as text and
the curves of staleness, importance ratio, mismatch KL, dropped samples and the trainer's wait, alerts shaded."""

from __future__ import annotations

import base64
import html

from grpolab.notebook.display import show_html
from grpolab.notebook.stages import _curves_path


def show_offpolicy(run) -> dict | None:
    """Print the run's off-policy figures and draw its asynchronous curves (nothing to draw for a synchronous run);
    returns the figures (None when the run logs no staleness)."""
    # lazy: orjson, yaml, numpy (the monitor loads when a run is shown, not with `import grpolab.notebook`)
    from grpolab.monitor import alerts, load_metrics
    from grpolab.monitor.offpolicy import PANELS, format_offpolicy, offpolicy
    from grpolab.monitor.plots import panels_for, plot_curves
    from grpolab.monitor.thresholds import thresholds_for

    if not run.metrics_file.exists():
        print(f"run {run.run_id} logged no metrics yet")
        return None
    view = load_metrics(run.metrics_file)
    summary = offpolicy(view)
    found = alerts(view, thresholds_for(run)) if summary and summary["asynchronous"] else []
    lines = format_offpolicy(summary, found)
    show_html(
        f"<b>{html.escape(run.run_id)}: asynchronous training</b><pre>{html.escape(chr(10).join(lines))}</pre>",
        f"{run.run_id}: asynchronous training\n" + "\n".join(lines),
    )
    if summary and summary["asynchronous"]:
        path = _curves_path(run).with_name("offpolicy.png")  # beside curves.png (a temp folder for a foreign run)
        plot_curves(view, found, path, title=f"{run.run_id}: off-policy", panels=PANELS)
        drawn = [title for title, _, _ in panels_for(view) if title in PANELS]
        # the picture inline with an alt text that names its curves (what a screen reader and a test read)
        png = base64.b64encode(path.read_bytes()).decode("ascii")
        alt = f"off-policy curves: {', '.join(drawn)}; steps {view.steps[0]}-{view.steps[-1]}"
        show_html(f"<img src='data:image/png;base64,{png}' alt='{html.escape(alt)}'/>", f"{alt} ({path})")
    return summary
