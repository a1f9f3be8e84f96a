// diamondlab's plotly figures in the browser (see diamondlab/viz/plotly_module.py): the module (_esm) of
// every figure in place of plotly's 5 MB one, and of the kernel's PlotlyModule, which brings plotly's
// module to the page.  anywidget gives a model 2 s, wall time, from its creation to the end of its
// initialize: a model's initialize here returns at once, and plotly's long tasks (its module's import,
// a figure's draw) run one at a time, each while no figure the kernel has announced waits for its own.
const KEY = Symbol.for("diamondlab.plotly");
// How long a figure announced and not initialized holds plotly's long tasks back: 1 s more than
// anywidget's 2 s (its model is lost, or was never created, by then), counted while the page looks every
// LOOK_MS, a longer pause (a long task: the figure's model, created after its announcement, may have
// waited behind it) as PAUSE_MS.
const WAIT_MS = 3000;
const LOOK_MS = 20;
const PAUSE_MS = 100;

/** The page's plotly: the module's source and the module (promises), the figures announced and not
 * initialized (key -> ms waited), those initialized before their announcement, the last long task and
 * when the page last looked at the figures announced. */
function pagePlotly() {
  if (!globalThis[KEY]) {
    const page = { opening: new Map(), early: new Set(), turn: Promise.resolve(), looked: 0 };
    page.source = new Promise((resolve) => { page.setSource = resolve; });
    page.module = page.source.then((source) => importOnce(page, source));
    globalThis[KEY] = page;
  }
  return globalThis[KEY];
}

/** Whether a figure announced is not initialized yet (WAIT_MS at most). */
function figureOpening(page) {
  const now = performance.now();
  const waited = Math.min(now - page.looked, PAUSE_MS);
  page.looked = now;
  for (const [key, before] of page.opening) {
    if (before + waited > WAIT_MS) page.opening.delete(key);
    else page.opening.set(key, before + waited);
  }
  return page.opening.size > 0;
}

/** `work` after the page's earlier long tasks, in a task of its own, once no figure is opening (none
 * can open during `work`: the page runs one task at a time). */
function inTurn(page, work) {
  const done = page.turn.then(async () => {
    do {
      await new Promise((resolve) => setTimeout(resolve, LOOK_MS));
    } while (figureOpening(page));
    return work();
  });
  page.turn = done.catch(() => {});
  return done;
}

/** Plotly's module from its source: fetched and parsed first (modulepreload, where the browser has it),
 * so that the import in a turn is the module's evaluation (about 2 s), not also its fetch. */
async function importOnce(page, source) {
  const url = URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
  const link = Object.assign(document.createElement("link"), { rel: "modulepreload", href: url });
  if (link.relList.supports("modulepreload")) {
    await new Promise((resolve) => { link.onload = link.onerror = resolve; document.head.append(link); });
  }
  try {
    return await inTurn(page, () => import(url));
  } finally {
    link.remove();
    URL.revokeObjectURL(url);
  }
}

/** The figure's model takes its messages as any ipywidgets model does: anywidget holds them until the
 * model's initialize has run and drops every later one where that took more than 2 s (another long task,
 * a plain plotly figure's drawing, can take them); the state a view missed, the kernel sends again once
 * the view has answered (diamondlab/viz/figurewidget.py).  The figure's key is its model's id. */
async function takeMessages(model, key) {
  const own = await model.widget_manager.get_model(key);
  const anyModel = Object.getPrototypeOf(own);
  if (own.comm && Object.hasOwn(anyModel, "_handle_comm_msg")) {
    const widgetModel = Object.getPrototypeOf(anyModel);
    own.comm.on_msg((msg) => widgetModel._handle_comm_msg.call(own, msg));
  }
}

export default () => {
  let figure; // plotly's widget of this figure's model, initialized once plotly's module has loaded
  return {
    initialize({ model }) {
      const page = pagePlotly();
      const source = model.get("_plotly_source");
      if (source === undefined) { // a figure
        const key = model.get("_figure_key");
        if (!page.opening.delete(key)) page.early.add(key);
        takeMessages(model, key); // where anywidget gives up on the model, it still takes its messages
        figure = page.module.then((module) => {
          const widget = module.default();
          widget.initialize({ model });
          return widget;
        });
      } else { // a PlotlyModule: plotly's module (the first one's), and the figures its kernel opens
        page.setSource(source);
        model.on("change:_figure_opening", () => {
          const key = model.get("_figure_opening");
          if (!page.early.delete(key)) page.opening.set(key, 0);
        });
      }
    },
    async render({ el, signal }) {
      const widget = await figure;
      return inTurn(pagePlotly(), () => (signal.aborted ? undefined : widget.render({ el })));
    },
  };
};
